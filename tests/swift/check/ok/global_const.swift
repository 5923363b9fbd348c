global const int N = 10;
(int o) timesN(int i) { o = i * N; }
trace(timesN(2));
