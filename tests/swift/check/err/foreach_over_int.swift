// EXPECT-ERROR: 3: foreach iterates over an array or a range, not int
int n = 3;
foreach i in n { trace(i); }
