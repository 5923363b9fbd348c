// EXPECT-ERROR: 2: cannot tell the type of an empty array
A = [];
