// EXPECT-ERROR: 2: takes a positive integer
@splitdegree="x" foreach i in [0:2] { trace(i); }
