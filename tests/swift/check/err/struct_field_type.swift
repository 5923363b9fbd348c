// EXPECT-ERROR: 4: expected int, found string
type p { int x; }
p v;
v.x = "s";
