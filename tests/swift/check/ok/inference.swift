x = 1; y = x + 2; s = "a" + "b"; f = 1.5 * 2.0; trace(x, y, s, f);
