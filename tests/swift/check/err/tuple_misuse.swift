// EXPECT-ERROR: 2: a parenthesised list is only allowed after the format operator
int a = (1, 2);
