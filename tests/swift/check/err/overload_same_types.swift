// EXPECT-ERROR: 3: function 'f' is defined twice
f(int a) { trace(a); }
f(int b) { trace(b); }
