// EXPECT-ERROR: 3: unterminated comment
int a = 1;
/* never closed
