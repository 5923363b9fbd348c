// EXPECT-ERROR: 2: output 'o' of 'f' is never assigned
(int o) f(int i) {
  trace(i);
}
