// EXPECT-ERROR: 3: a p cannot appear on a command line
type p { int x; }
app (void) bad(p v) { "echo" v; }
