// Imports the module importing it: each is loaded once, as in Swift/T.
import modules.setup;
(int o) from_cycle() { o = setup_twice() + 1; }
