// EXPECT-ERROR: 3: 'i' is an input and cannot be assigned
(int o) f(int i) {
  i = 2;
  o = i;
}
