// EXPECT-ERROR: 3: 'a' is already declared
int a = 1;
int a = 2;
