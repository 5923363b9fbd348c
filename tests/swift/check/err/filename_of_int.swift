// EXPECT-ERROR: 2: '@' gives a file's name; this is int
app (void) bad(int i) { "echo" @i; }
