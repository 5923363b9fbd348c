(int A[]) squares(int n) { foreach i in [0:n-1] { A[i] = i * i; } }
int S[] = squares(5);
trace(size(S), S[4]);
