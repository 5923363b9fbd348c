int D[string] = {"x": 1};
foreach v, k in D { trace(k, v); }
