import sys;
foreach i in [1:200] { sleep(0.0); }
trace("done");
