// Definitions over any type: `<T>` type variables.
import io;
<T> (T o) same(T i) {
  o = i;
}
<K, V> (int n) count_entries(V A[K]) {
  n = size(A);
}
main {
  printf("%i %s %.1f", same(3), same("text"), same(2.5));
  string D[string];
  D["a"] = "x";
  D["b"] = "y";
  printf("entries %i", count_entries(D));
}
