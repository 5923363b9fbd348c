typedef count int;
count c = 3;
trace(c + 1);
