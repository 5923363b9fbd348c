// EXPECT-ERROR: 4: 'f' returns 2 results, 3 expected
(int a, int b) f() { a = 1; b = 2; }
int x, y, z;
(x, y, z) = f();
