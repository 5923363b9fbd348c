int A[];
foreach i in [0:4] { A[i] = i * i; }
trace(size(A));
