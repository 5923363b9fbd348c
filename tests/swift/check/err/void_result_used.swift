// EXPECT-ERROR: 3: 'f' returns nothing
() f() { trace(1); }
int a = f();
