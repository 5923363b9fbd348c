int a = 1; int b = 2; trace(a < b, a <= b, a > b, a >= b, a == b, a != b);
