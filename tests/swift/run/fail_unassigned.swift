int x;
trace(x + 1);
