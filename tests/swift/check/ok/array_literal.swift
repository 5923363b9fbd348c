int A[] = [1, 2, 3]; trace(A[0], size(A));
