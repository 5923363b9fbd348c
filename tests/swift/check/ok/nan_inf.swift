float a = NaN; float b = inf; float c = -inf; trace(a, b, c);
