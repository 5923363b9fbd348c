int A[];
A[0] = 1;
trace(A[3]);
