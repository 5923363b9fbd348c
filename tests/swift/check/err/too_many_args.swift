// EXPECT-ERROR: 3: 'f' takes 1 argument, given 2
(int o) f(int i) { o = i; }
int r = f(1, 2);
