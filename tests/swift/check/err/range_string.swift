// EXPECT-ERROR: 2: a range takes numbers, not string
foreach i in [0:"2"] { trace(i); }
