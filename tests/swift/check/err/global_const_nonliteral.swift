// EXPECT-ERROR: 3: global const 'N' needs a literal int value
int a = 1;
global const int N = a;
