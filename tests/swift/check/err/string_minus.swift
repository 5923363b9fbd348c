// EXPECT-ERROR: 2: '-' cannot combine string and string
string s = "a" - "b";
