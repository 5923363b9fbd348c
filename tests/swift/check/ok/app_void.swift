app (void) touch(string name) { "touch" name; }
touch("x");
