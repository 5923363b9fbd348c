(int s) total(int A[]) { s = sum_integer(A); }
int A[] = [1, 2, 3];
trace(total(A));
