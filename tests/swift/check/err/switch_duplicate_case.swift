// EXPECT-ERROR: 5: case 1 appears twice
int a = 1;
switch (a) {
  case 1: trace(1);
  case 1: trace(2);
}
