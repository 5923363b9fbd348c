app (void o) t() { "true" }
foreach i in [1:10] { @prio=i t(); }
trace("ran");
