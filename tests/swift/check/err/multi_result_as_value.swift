// EXPECT-ERROR: 3: 'f' returns 2 results
(int a, int b) f() { a = 1; b = 2; }
int x = f() + 1;
