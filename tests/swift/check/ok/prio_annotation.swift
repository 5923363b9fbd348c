app (void) job(int i) { "true" i; }
foreach i in [0:3] { @prio=i job(i); }
