trace(later(2));
(int o) later(int i) { o = i * 10; }
