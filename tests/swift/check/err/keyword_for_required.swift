// EXPECT-ERROR: 3: parameter 'x' of 'f' has no default: give it by position
f(int x) { trace(x); }
f(x=1);
