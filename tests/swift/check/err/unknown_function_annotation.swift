// EXPECT-ERROR: 2: unknown function annotation '@magic'
@magic (int o) f() { o = 1; }
trace(f());
