x = 20; y = x * 2; trace(y);
