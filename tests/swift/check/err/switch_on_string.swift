// EXPECT-ERROR: 3: switch takes an int, not string
string s = "a";
switch (s) { case 1: trace(1); }
