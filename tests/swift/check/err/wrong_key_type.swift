// EXPECT-ERROR: 3: this array is indexed by int, not string
int A[];
A["x"] = 1;
