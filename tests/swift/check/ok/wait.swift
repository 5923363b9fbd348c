int a = 1;
wait (a) { trace("a is", a); }
