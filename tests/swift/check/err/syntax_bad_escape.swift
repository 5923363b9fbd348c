// EXPECT-ERROR: 2: invalid escape sequence
string s = "\q";
