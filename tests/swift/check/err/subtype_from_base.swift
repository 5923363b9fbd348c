// EXPECT-ERROR: 5: expected superint, found int
type superint int;
main {
  int x = 0;
  superint y = x;
}
