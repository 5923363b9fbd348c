// python(code, expr) runs in one persistent interpreter per worker: what a
// call defines, a later call on that worker sees.
import io;
import python;
main {
  string first = python("counter = 41", "counter + 1");
  printf("first %s", first);
  // After the first call, on every worker that ran it.
  first => printf("defined %s", python("import math", "round(math.sqrt(16))"));
  string s = python_persist("def twice(x):\n    return 2 * x", "twice(21)");
  printf("twice %s", s);
}
