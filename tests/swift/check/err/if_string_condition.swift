// EXPECT-ERROR: 3: a condition must be boolean, not string
string a = "x";
if (a) { trace(a); }
