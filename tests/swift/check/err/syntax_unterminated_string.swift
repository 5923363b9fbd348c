// EXPECT-ERROR: 2: unterminated string literal
string s = "oops;
