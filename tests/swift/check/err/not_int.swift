// EXPECT-ERROR: 2: '!' does not apply to int
boolean b = !1;
