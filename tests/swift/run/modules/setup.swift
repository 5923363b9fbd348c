// A module of the modules_with_statements test: its statements run (once,
// however often imported), its top-level variables are globals, and it
// imports the script's other module, which imports it back (a cycle).
import modules.cycle;
trace("setup ran");
int SETUP_N = 7;
(int o) setup_twice() { o = SETUP_N * 2; }
