// EXPECT-ERROR: 3: type 'p' is already defined
type p { int x; }
type p { int y; }
