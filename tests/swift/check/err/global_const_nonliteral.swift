// EXPECT-ERROR: 3: global const 'N' needs a constant int value
int a = 1;
global const int N = a;
