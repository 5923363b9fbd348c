// An element of a nested container is read as soon as it is set, even
// by the container's own writers (Swift/T's behaviour).
type P { int x; int y; }
type Q { P p; int z; }
int B[][];
B[0][0] = 1;
B[0][1] = B[0][0] + 1;
B[1][0] = B[0][1] * 10;
trace("B", B[1][0], size(B[0]));
Q q;
q.p.x = 1;
q.p.y = q.p.x + 1;
q.z = q.p.y * 10;
trace("q", q.z);
string D[string][int];
foreach i in [1:3] { D["a"][i] = sprintf("%i", i * i); }
D["b"][0] = D["a"][3] + "!";
trace("D", D["b"][0]);
