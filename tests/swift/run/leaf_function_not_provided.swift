(int o) f(int i) "mypkg" "1.0" "f_impl";
trace(f(1));
