// EXPECT-ERROR: 4: field 'x' is defined twice
type p {
  int x;
  string x;
}
