(int A[]) squares(int n) {
  foreach i in [0:n-1] { A[i] = i * i; }
}
trace(size(squares(4)));
