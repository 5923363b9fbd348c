// A Python exception fails the run with its traceback.
import python;
main {
  string s = python("def f():\n    raise ValueError('bad value')", "f()");
  trace(s);
}
