int a[];
foreach i in [1:20000] { a[i] = i %% 7; }
trace(size(a));
