// EXPECT-ERROR: 3: parameter 'x' of 'f' is not given
(int o) f(int x, int y = 1) { o = x + y; }
trace(f(y=2));
