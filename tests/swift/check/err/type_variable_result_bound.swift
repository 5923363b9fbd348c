// EXPECT-ERROR: 3: expected int, but 'same' returns string
<T> (T o) same(T i) { o = i; }
int n = same("text");
