// Top-level variables are read in functions (Swift/T's globals): directly,
// through calls, in an app's command line, in recursion, at any server.
import string;
import files;
string PREFIX = "p-";
int N = 3;
int A[] = [10, 20, 30];
app (file o) echo(string s) { "echo" (PREFIX + s) @stdout=o }
(string o) label(int i) { o = PREFIX + toString(i) + "/" + toString(N); }
(int o) total(int k) {
  if (k == 0) { o = 0; } else { o = A[k - 1] + total(k - 1); }
}
(string o) outer(int i) { o = label(i); }
foreach i in [1:N] {
  trace(outer(i));
}
trace("total", total(N));
file f<"/locus/echo.txt"> = echo("x");
main {
  trace("main", label(0));
}
trace("echoed", read(f));
