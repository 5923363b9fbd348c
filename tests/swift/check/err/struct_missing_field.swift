// EXPECT-ERROR: 4: type p has no field 'y'
type p { int x; }
p v;
v.y = 1;
