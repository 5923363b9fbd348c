trace("a", 1.5, true, 2.0);
