int a = 3;
if (a == 1) { trace(1); } else if (a == 2) { trace(2); } else { trace(3); }
