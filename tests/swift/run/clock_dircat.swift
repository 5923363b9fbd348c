import sys;
float t0 = clock();
int s = clock_seconds();
// clock() is seconds since the epoch, to the millisecond.
trace(t0 > 1.7e9, t0 - itof(s) < 2.0, dircat("data", "run 1", "x.txt"));
