(void v) nothing(int i) { trace(i); }
nothing(1);
