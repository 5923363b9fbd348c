// EXPECT-ERROR: 2: global const 'trace' has the name of a function
global const int trace = 1;
