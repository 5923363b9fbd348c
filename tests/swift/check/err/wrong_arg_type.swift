// EXPECT-ERROR: 3: argument 1 of 'f' must be int, not string
(int o) f(int i) { o = i; }
int r = f("x");
