import math;
float a = sqrt(2.0);
float b = floor(PI);
trace(a, b, E);
