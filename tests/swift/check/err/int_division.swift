// EXPECT-ERROR: 2: use '%/' for integer division
int a = 4; int b = 2; int c = a / b;
