// A failure in a module's code is reported at the module's file and line.
import modules.failing;
main {
  void v = run_boom();
}
