int a = 5;
wait (a) { trace("ready", a); }
