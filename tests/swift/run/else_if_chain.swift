int a = 2;
if (a == 1) { trace("one"); } else if (a == 2) { trace("two"); } else { trace("many"); }
