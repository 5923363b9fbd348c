// EXPECT-ERROR: 3: 'f' takes 2 arguments, given 1
(int o) f(int i, int j) { o = i + j; }
int r = f(1);
