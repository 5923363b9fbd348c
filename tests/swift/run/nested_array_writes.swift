// A[i][j] = v makes the inner arrays on first write; they close with A.
int A[][];
foreach i in [0:3] { foreach j in [0:2] { A[i][j] = i * 10 + j; } }
trace("corner", A[3][2], size(A), size(A[1]));
string names[][][];
names[0][1][2] = "deep";
trace("three", names[0][1][2]);
type point { int x; int y; }
type seg { point a; point b; }
seg s;
s.a.x = 1; s.a.y = 2; s.b.x = 3; s.b.y = 4;
trace("seg", s.a.x + s.b.y);
