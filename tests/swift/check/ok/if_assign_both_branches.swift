int a = 3;
int b;
if (a > 2) { b = 1; } else { b = 2; }
trace(b);
