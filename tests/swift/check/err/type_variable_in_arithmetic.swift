// EXPECT-ERROR: 2: '+' cannot combine T and int
<T> (T o) bad(T i) { o = i + 1; }
