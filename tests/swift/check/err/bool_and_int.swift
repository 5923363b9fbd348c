// EXPECT-ERROR: 2: '&&' cannot combine boolean and int
boolean b = true && 1;
