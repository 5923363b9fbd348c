// EXPECT-ERROR: 4: 'a' is assigned more than once
int a;
a = 1;
a = 2;
