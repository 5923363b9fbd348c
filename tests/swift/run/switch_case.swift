int a = 3; int s;
switch (a) { case 1: s = 1; case 2: case 3: s = 23; default: s = 0; }
trace(s);
