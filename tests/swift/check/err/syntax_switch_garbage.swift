// EXPECT-ERROR: 3: expected 'case', 'default' or '}'
int a = 1;
switch (a) { trace(1); }
