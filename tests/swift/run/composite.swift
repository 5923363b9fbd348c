(int o) twice(int i) { o = i * 2; }
trace(twice(21));
