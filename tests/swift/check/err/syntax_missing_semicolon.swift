// EXPECT-ERROR: 3: expected ';', found 'int'
int a = 1
int b = 2;
