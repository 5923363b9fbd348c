// A name defined for several parameter types: each call runs the
// definition its arguments' types choose.
(string o) describe(int a) { o = "int " + fromint(a); }
(string o) describe(float a) { o = "float " + fromfloat(a); }
(string o) describe(string a, int n) { o = "string " + a + " " + fromint(n); }
int x = 1;
float y = 2.5;
trace(describe(x));
trace(describe(y));
trace(describe("s", 3));
trace(describe(4));
