// EXPECT-ERROR: 2: expected int, found string
int i = "3";
