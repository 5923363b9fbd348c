// EXPECT-ERROR: 3: 'a' is assigned more than once
int a = 1;
a = 2;
