// A module of the modules_failure_position test: its call fails.
app (void o) boom() { "false" }
(void o) run_boom() {
  o = boom();
}
