// EXPECT-ERROR: 3: 'i' is an input
foreach i in [0:3] {
  i = 2;
}
