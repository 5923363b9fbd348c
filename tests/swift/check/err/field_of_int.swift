// EXPECT-ERROR: 3: a value of type int has no fields
int a = 1;
int b = a.x;
