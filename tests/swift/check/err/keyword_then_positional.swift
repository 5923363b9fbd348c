// EXPECT-ERROR: 3: a positional argument after keyword arguments
(int o) f(int x = 0, int y = 1) { o = x + y; }
trace(f(x=1, 2));
