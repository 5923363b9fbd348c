float a = 1 + 2 * 3 ** 2; boolean b = 1 < 2 && 3 > 2 || false; trace(a, b);
