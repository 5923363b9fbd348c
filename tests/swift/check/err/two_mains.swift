// EXPECT-ERROR: 3: a program has only one 'main'
main { trace(1); }
main { trace(2); }
