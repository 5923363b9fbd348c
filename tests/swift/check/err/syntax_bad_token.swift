// EXPECT-ERROR: 2: unexpected character '$'
int a = 1 $ 2;
