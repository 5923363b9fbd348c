int a = 2; int b;
switch (a) {
  case 1: b = 10;
  case 2: case 3: b = 20;
  default: b = 0;
}
trace(b);
