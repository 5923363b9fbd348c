// EXPECT-ERROR: 3: argument 2 of 'location' must be strictness
// EXPECT-ERROR: 3: argument 3 of 'location' must be accuracy
location L = location(0, RANK, HARD);
