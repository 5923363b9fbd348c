type bag { int items[]; }
bag b;
b.items[0] = 5;
trace(b.items[0]);
