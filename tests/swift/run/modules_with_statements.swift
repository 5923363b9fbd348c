// A module's statements run as the script's top-level ones (once); its
// top-level variables are read by the script's functions and its own; an
// import cycle between two modules is accepted.
import modules.setup;
import modules.cycle;
import modules.setup;
(int o) plus_one() { o = SETUP_N + 1; }
trace("values", SETUP_N, setup_twice(), from_cycle(), plus_one());
