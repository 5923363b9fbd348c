float a = 7.0; trace(a + 1.0, a - 1.0, a * 2.0, a / 2.0, a ** 2.0, -a);
