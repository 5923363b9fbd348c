@pure (int o) f(int i) { o = i + 1; }
@dispatch=WORKER (int o) g(int i) "pkg" "1.0" "g";
trace(f(1), g(2));
