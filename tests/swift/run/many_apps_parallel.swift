app (void o) t() { "true" }
foreach i in [1:100] { t(); }
trace("100 apps");
