// EXPECT-ERROR: 3: parameter 'x' of 'f' is given twice
(int o) f(int x = 1) { o = x; }
trace(f(1, x=2));
