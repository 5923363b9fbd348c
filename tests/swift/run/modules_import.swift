// User modules: `import a.b;` is `a/b.swift` beside the script; a module
// imported twice (here also by the other module) is loaded once.
import io;
import modules.shapes.area;
import modules.greeting;
main {
  printf("area %i", square_area(7));
  printf("%s", greet("modules"));
}
