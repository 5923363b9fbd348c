for (int i = 0; i < 3; i = i + 1) { trace("for", i); }
