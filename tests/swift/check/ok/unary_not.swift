boolean b = !true; boolean c = !(1 > 2); trace(b, c);
