// EXPECT-ERROR: 3: argument 2 of 'pair' must be int, not string
<T> (T o[]) pair(T a, T b) { o[0] = a; o[1] = b; }
int P[] = pair(1, "b");
