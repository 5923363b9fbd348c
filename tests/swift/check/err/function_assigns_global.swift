// EXPECT-ERROR: 4: 'G' is a top-level variable: only the top level assigns it, not a function
int G = 5;
f() {
  G = 3;
}
f();
