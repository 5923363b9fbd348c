// EXPECT-ERROR: 3: indexed by string, not int
int D[string];
int v = D[1];
