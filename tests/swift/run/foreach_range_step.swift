foreach i in [0:10:5] { trace(i); }
