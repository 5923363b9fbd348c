int A[];
foreach i in [0:99] { A[i] = i; }
trace(size(A), sum_integer(A));
