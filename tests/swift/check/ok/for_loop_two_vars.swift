for (i = 0, j = 10; i < j; i = i + 1, j = j - 1) { trace(i, j); }
