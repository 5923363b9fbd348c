// `for` loops as Swift/T's guide writes them: array loop variables
// declared in the header (`int A[] = init`), and updates reading the
// body's own variables (`count = count + c`, `A = A2`).
int init[] = [1, 2, 3];
for (int A[] = init, int i = 0; i < 3; A = A2, i = i + 1) {
  int A2[];
  foreach v, k in A { A2[k] = v * 2; }
  trace("doubled", i, A[0], A[2]);
}
int N = 5;
for (int j = 0, int count = 0; j < N; j = j + 1, count = count + c) {
  int c;
  if (j %% 2 == 0) { c = 1; } else { c = 0; }
  trace("count", j, count);
}
