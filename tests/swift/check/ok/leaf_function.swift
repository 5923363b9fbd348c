(int o) add_leaf(int a, int b) "mypkg" "1.0" "add";
trace(add_leaf(1, 2));
