// The smallest workflow: futures, a composite function and trace.
import io;

(int o) square(int i) {
  o = i * i;
}

main {
  foreach i in [1:4] {
    printf("square(%i) = %i", i, square(i));
  }
  trace("done");
}
