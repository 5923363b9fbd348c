// EXPECT-ERROR: 2: a redirection takes a file or a file name, not int
app (void) bad(int i) { "echo" @stdout=i; }
