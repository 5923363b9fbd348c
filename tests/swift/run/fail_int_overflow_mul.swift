int x = 4294967296;
int y = x * x;
trace(y);
