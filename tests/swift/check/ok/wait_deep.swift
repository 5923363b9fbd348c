int A[] = [1, 2];
wait deep (A) { trace(size(A)); }
