foreach i in [0:10:2] { trace(i); }
