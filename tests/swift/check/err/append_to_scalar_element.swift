// EXPECT-ERROR: 3: only a bag or array can be appended to; this is int
int A[];
A[0] += 1;
