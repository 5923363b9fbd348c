float a = 2.5; trace(a * 2, a + 1, 3 * a);
