// `type X Y;`, url and external types, float ranges, multi-dimensional
// parameters with any key types, `/` joining strings in a mapping, global
// constants from constant expressions, Swift/T's annotations.
import io;
import files;
type count int;
global const float NEG = -3.5;
global const int N = 2 * 3 + 1;
global const string WHO = "wor" + "ld";
app (file o) show(url u) { "echo" u @stdout=o }
@sideeffectfree (int o) entries(string A[string][float]) { o = size(A); }
main {
  count c = count(3);
  url u = "http://example.org/data";
  file shown = show(u);
  printf("read %s", read(shown));
  external e;
  foreach x in [1.0:2.0] { printf("x %.1f", x); }
  foreach y in [0.0:1.0:0.25] { printf("y %.2f", y); }
  float F[] = [0:1:0.5];
  printf("floats %i", size(F));
  string dir = "sub";
  file f<dir/"tmp.txt">;
  printf("mapped %s", filename(f));
  string A[string][float];
  A["a"][1.5] = "x";
  A["b"][2.5] = "y";
  printf("entries %i count %i", entries(A), c);
  printf("%.1f %i hello %s", NEG, N, WHO);
  @unroll=2 foreach i in [1:2] { printf("unrolled %i", i); }
  @nosplit foreach j in [1:1] { printf("unsplit %i", j); }
}
