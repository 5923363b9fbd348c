// Functions without an output list, composite and app.
import io;
say_hello() {
  printf("hello");
}
greet(string who, int n) {
  printf("hi %s %i", who, n);
}
app echo(string s) {
  "echo" s
}
main {
  say_hello();
  greet("bob", 3);
  echo("from an app");
}
