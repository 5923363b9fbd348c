// EXPECT-ERROR: 2: undeclared variable 'b'
int a = b + 1;
