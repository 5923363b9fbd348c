// EXPECT-ERROR: 3: expected superint, found int
type superint int;
superint y = 2;
