// EXPECT-ERROR: 4: 'a' shadows a variable of an enclosing scope
int a = 1;
foreach i in [0:2] {
  int a = 2;
}
