// EXPECT-ERROR: 2: expected int, found boolean
int i = true;
