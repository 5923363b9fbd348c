import math;
trace(sqrt(16.0), floor(2.7), ceil(2.1), max_integer(3, 9), abs_integer(-4));
