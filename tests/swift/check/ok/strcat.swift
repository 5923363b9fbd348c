string s = strcat("a", 1, 2.5, true);
trace(s);
