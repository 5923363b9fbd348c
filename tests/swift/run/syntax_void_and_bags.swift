// void variables as signals, `=>` on them; bags with `+=` and `foreach`.
import io;
(void o) first() { printf("first"); }
main {
  void v = first();
  v => printf("after first");
  bag<int> b;
  b += 1;
  b += 2;
  foreach i in [3:5] { b += i * 10; }
  printf("total %i of %i", sum_integer(b), size(b));
  foreach x in b { printf("member %i", x); }
}
