// EXPECT-ERROR: 2: a condition must be boolean, not string
for (i = 0; "yes"; i = i + 1) { trace(i); }
