// wait deep waits for every element of nested arrays, arrays of structs
// and structs of fields, each written by other work.
type P { int x; int y; }
int B[][];
foreach i in [0:2] { foreach j in [0:1] { B[i][j] = i * 10 + j; } }
P ps[];
foreach i in [0:2] { ps[i].x = i; ps[i].y = i * i; }
P q;
q.x = 5;
q.y = q.x + 1;
wait deep (B, ps, q) { trace("deep", size(B), size(B[2]), ps[2].y, q.y); }
