int a;
int b = a + 1;
trace(b);
a = 41;
