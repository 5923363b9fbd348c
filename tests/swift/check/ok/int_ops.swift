int a = 7; trace(a + 1, a - 1, a * 2, a %/ 2, a %% 2, a ** 2, -a);
