// EXPECT-ERROR: 3: 'superint(…)' converts one value, given 2
type superint int;
superint y = superint(1, 2);
