// EXPECT-ERROR: 3: expected an expression, found ';'
// EXPECT-ERROR: 5: expected ';', found 'trace'
int a = ;
int b = 2
trace(b);
