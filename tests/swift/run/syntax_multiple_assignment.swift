// Several variables assigned at once, with and without parentheses.
import io;
(int a, int b) two() { a = 1; b = 2; }
main {
  int x, y;
  x, y = two();
  int p; int q;
  p, q = (3, 4);
  int r; int s; int t;
  r, s, t = 5, 6, 7;
  printf("%i %i %i %i %i %i %i", x, y, p, q, r, s, t);
}
