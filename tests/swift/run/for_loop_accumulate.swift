for (i = 1, acc = 1; i <= 5; i = i + 1, acc = acc * i) { if (i == 5) { trace(acc * i); } }
