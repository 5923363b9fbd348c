// EXPECT-ERROR: 3: 'f' reads top-level variable 'G', which is not declared before this call
(int o) f() { o = G; }
trace(f());
int G = 5;
