// EXPECT-ERROR: 3: 'f' has no parameter 'y' (its parameters: x)
(int o) f(int x = 1) { o = x; }
trace(f(y=2));
