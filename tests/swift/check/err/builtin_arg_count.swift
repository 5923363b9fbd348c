// EXPECT-ERROR: 2: 'size' takes 1 argument, given 0
int n = size();
