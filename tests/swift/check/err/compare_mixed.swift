// EXPECT-ERROR: 2: '<' cannot combine int and string
boolean b = 1 < "a";
