int a = 9;
switch (a) { case 1: trace("one"); default: trace("default"); }
