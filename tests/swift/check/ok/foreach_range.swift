int n = 5;
foreach i in [0:n-1] { trace(i); }
