// EXPECT-ERROR: 4: a case label must be an integer literal
int a = 1; int b = 2;
switch (a) {
  case b: trace(1);
}
