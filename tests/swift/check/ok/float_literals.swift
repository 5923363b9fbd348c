float a = 1.5; float b = 2e3; float c = 1.5e-3; float d = 7; trace(a, b, c, d);
