// EXPECT-ERROR: 3: cannot index a value of type int
int a = 1;
int b = a[0];
