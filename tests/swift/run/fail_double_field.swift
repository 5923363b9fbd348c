type P { int a; }
P p;
p.a = 1;
foreach i in [1:2] { p.a = i; }
