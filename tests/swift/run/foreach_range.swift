foreach i in [1:3] { trace("i", i); }
