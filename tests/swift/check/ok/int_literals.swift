int a = 42; int b = 0x2A; int c = 0o52; int d = 052; trace(a, b, c, d);
