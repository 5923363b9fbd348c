type point { int x; int y; }
type segment { point a; point b; }
segment s;
s.a.x = 1; s.a.y = 2; s.b.x = 3; s.b.y = 4;
trace(s.b.x);
