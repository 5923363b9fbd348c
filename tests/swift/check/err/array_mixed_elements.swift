// EXPECT-ERROR: 2: array elements must all be int, found string
A = [1, "two"];
