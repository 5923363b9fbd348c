// EXPECT-ERROR: 2: undeclared variable 'nope'
trace(nope);
