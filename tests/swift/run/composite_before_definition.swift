trace(later(3));
(int o) later(int i) { o = i + 100; }
