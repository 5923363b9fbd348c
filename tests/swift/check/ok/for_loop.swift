for (int i = 0; i < 5; i = i + 1) { trace(i); }
