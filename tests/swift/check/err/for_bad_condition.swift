// EXPECT-ERROR: 2: a condition must be boolean, not int
for (i = 0; i; i = i + 1) { trace(i); }
