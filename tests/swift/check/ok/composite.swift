(int o) inc(int i) { o = i + 1; }
trace(inc(1));
