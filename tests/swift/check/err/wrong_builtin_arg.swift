// EXPECT-ERROR: 2: argument 1 of 'size' must be an array, not int
int n = size(3);
