// EXPECT-ERROR: 4: no definition of 'f' takes (boolean); there are f(int), f(float)
f(int a) { trace(a); }
f(float a) { trace(a); }
f(true);
