// EXPECT-ERROR: 2: unknown function 'frobnicate'
frobnicate(1);
