int a = 2;
switch (a) {
  case 1: trace("one");
  case 2: trace("two");
  default: trace("other");
}
