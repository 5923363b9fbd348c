// EXPECT-ERROR: 3: expected int, found int[]
int A[] = [1];
int b = A;
