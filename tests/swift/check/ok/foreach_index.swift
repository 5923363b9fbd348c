string A[] = ["a", "b"];
foreach v, i in A { trace(i, v); }
