int A[];
foreach i in [0:2] { foreach j in [0:2] { A[i * 3 + j] = i * j; } }
trace(size(A), A[8]);
