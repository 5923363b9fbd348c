// EXPECT-ERROR: 2: output 'b' of 'f' is never assigned
(int a, int b) f() {
  a = 1;
}
