// EXPECT-ERROR: 4: assigning it here would assign it on every iteration
int a;
foreach i in [0:3] {
  a = i;
}
