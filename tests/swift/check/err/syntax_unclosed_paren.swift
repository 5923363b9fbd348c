// EXPECT-ERROR: 2: expected ')', found ';'
int a = (1 + 2;
