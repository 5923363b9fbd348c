// EXPECT-ERROR: 2: expected 'in'
foreach i [0:3] { trace(i); }
