// EXPECT-ERROR: 2: a variable cannot be void
void v;
