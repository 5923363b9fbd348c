// EXPECT-ERROR: 4: 'a' is assigned more than once
int a; int c = 1;
if (c > 0) { a = 1; }
a = 2;
