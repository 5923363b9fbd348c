int big = 2;
trace(big ** 64);
