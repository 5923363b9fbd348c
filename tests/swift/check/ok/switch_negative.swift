int a = -1;
switch (a) { case -1: trace("neg"); default: trace("pos"); }
