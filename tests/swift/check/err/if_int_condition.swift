// EXPECT-ERROR: 3: a condition must be boolean, not int
int a = 1;
if (a) { trace(a); }
