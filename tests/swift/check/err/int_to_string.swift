// EXPECT-ERROR: 2: expected string, found int
string s = 3;
