trace(1, 2, 3);
