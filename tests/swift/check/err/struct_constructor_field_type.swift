// EXPECT-ERROR: 3: field 'a' of pair is int, given string
type pair { int a; float b; }
pair q = pair("x", 2.0);
