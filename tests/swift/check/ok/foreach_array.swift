int A[] = [3, 1, 2];
foreach v in A { trace(v); }
