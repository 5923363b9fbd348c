// EXPECT-ERROR: 3: expected '}', found end of file
main {
  trace(1);
