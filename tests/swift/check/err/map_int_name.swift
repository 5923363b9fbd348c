// EXPECT-ERROR: 2: a mapping must be a string, not int
file f<3>;
