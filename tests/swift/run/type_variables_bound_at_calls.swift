// A definition over any type: in its body a type variable is a type of its
// own; at each call it is what the arguments make it, and so are the
// results (`same(3) + 1` is an int, `pair(1, 2)` an int[]).
<T> (T o) same(T i) { o = i; }
<T> (T o[]) pair(T a, T b) { o[0] = a; o[1] = b; }
<T> (T o) first(T A[]) { o = A[0]; }
<T> (int n) count(T A[]) { n = size(A); }
int n = same(3) + 1;
string s = same("x") + "y";
int P[] = pair(1, 2);
trace(n, s, first(P), count(pair("a", "b")), same(first(pair(2.5, 1.0))));
