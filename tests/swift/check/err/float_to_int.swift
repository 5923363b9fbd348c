// EXPECT-ERROR: 2: expected int, found float
int i = 1.5;
