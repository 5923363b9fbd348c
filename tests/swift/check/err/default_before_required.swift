// EXPECT-ERROR: 2: parameter 'y' needs a default value: it follows 'x', which has one
f(int x = 0, int y) { trace(x, y); }
