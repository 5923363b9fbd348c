int D[string] = {"x": 1, "y": 2};
trace(D["y"]);
foreach v, k in D { trace(k, v); }
