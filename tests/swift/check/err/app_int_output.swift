// EXPECT-ERROR: 2: app outputs must be files, not int
app (int o) bad() { "echo"; }
