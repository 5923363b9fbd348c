// EXPECT-ERROR: 5: argument 1 of 'f' must be name, not string
import string;
type name string;
(int o) f(name n) { o = strlen(n); }
int k = f("plain");
