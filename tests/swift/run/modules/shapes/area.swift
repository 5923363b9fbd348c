// A module of the modules_import test.
(int o) square_area(int side) { o = side * side; }
