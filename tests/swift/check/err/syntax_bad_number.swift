// EXPECT-ERROR: 2: invalid number '12abc'
int a = 12abc;
