int a = 1;
trace(a) => { trace("then"); }
