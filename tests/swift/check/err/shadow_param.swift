// EXPECT-ERROR: 3: shadows
(int o) f(int i) {
  int i = 3;
  o = i;
}
