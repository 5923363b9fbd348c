int a = 1; int b;
if (a > 0) { b = 10; } else { b = 20; }
trace(b);
