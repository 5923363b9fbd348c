// EXPECT-ERROR: 2: expected int, found float
foreach i in [0:2.5] { trace(i); }
