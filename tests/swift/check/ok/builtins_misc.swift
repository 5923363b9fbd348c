int A[] = [1, 2, 3];
trace(size(A), contains(A, 2), sum_integer(A), max_integer(1, 2), abs_integer(-3));
