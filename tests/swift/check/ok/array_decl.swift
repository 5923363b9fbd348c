int A[]; A[0] = 1; A[1] = 2; trace(size(A));
