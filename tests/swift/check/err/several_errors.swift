// EXPECT-ERROR: 4: expected int, found string
// EXPECT-ERROR: 5: undeclared variable 'nope'
// EXPECT-ERROR: 6: unknown function 'frob'
int a = "x";
int b = nope;
frob();
