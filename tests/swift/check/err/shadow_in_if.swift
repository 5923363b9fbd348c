// EXPECT-ERROR: 4: shadows
int a = 1;
if (a > 0) {
  string a = "x";
}
