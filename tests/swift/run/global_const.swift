global const int N = 7;
(int o) f(int i) { o = i * N; }
trace(f(6));
