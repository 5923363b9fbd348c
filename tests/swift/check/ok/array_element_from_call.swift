(int o) sq(int i) { o = i * i; }
int A[];
foreach i in [0:3] { A[i] = sq(i); }
trace(A[2]);
