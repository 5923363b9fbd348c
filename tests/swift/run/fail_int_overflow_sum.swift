import math;
int m = 9223372036854775807;
int s = sum_integer([m, 1]);
trace(s);
