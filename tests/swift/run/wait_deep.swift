int A[];
foreach i in [0:4] { A[i] = i; }
wait deep (A) { trace("all", size(A)); }
