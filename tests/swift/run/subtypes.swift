// `type name base;` makes a subtype (Swift/T's `SubType`): its values are
// its base's where a base is wanted (arguments, operators, assignments to a
// base variable), but a base value becomes one only through `name(v)`.
// Subtypes of file are mapped and written by apps like files.
import io;
import string;
import files;
import assert;
type superint int;
type name string;
type textfile file;
type superfloat float;
type hyperint superint;

app (textfile o) greet(name n) {
  "sh" "-c" ("echo hello " + n + " > $0") o
}
app (textfile o) copy(textfile i) {
  "cp" i o
}
(superint o) twice(superint i) {
  o = superint(i * 2);
}
superint A[];
foreach i in [0:3] {
  A[i] = superint(i);
}
foreach v, k in A {
  if (v == 2) { printf("two at %i", k); }
}
superint s = twice(superint(21));
int plain = s;
printf("s=%i plain=%i less=%i", s, plain + 1, s < 50);
assertEqual(s, 42, "a subtype compared with its base");
name n = name("world");
textfile f<"greet.txt"> = greet(n);
textfile g = copy(f);
printf("%s", read(g));
string t = n + "!";
printf("%s %s", t, strcat(n, "?"));
float x = superfloat(1.5) + 1;
printf("%.1f", x);
file plainfile = g;
int B[] = [1, 2];
printf("element %i", B[s - 41]);
hyperint h = hyperint(s);
superint back = h;
int deep = h;
printf("chain %i %i", back, deep);
