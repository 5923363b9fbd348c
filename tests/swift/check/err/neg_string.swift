// EXPECT-ERROR: 2: '-' does not apply to string
string s = -"a";
