// Parameters with defaults may be left out; arguments may name their
// parameter (Swift/T's default and keyword arguments).
import io;
(string o) greet(string name = "world", string greeting = "Hello", int times = 1) {
  o = sprintf("%s %s x%i", greeting, name, times);
}
show(string m, int x = 7) {
  printf("%s: %i", m, x);
}
printf("%s", greet());
printf("%s", greet("Ann"));
printf("%s", greet(greeting="Hi"));
printf("%s", greet("Bo", times=3));
printf("%s", greet(times=2, name="Cy"));
show("given", 2);
show("default");
