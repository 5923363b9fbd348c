// EXPECT-ERROR: 2: '+' cannot combine int and float
int a = 1; float b = 2.0; float c = a + b;
