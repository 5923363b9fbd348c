int A[] = [10, 20];
foreach v, i in A { trace(i, v); }
