// EXPECT-ERROR: 3: type 'f' has the name of a function
(int o) f(int i) { o = i; }
type f { int a; }
