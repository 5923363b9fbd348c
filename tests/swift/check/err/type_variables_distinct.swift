// EXPECT-ERROR: 2: expected T, found U
<T, U> (T o) conv(U i) { o = i; }
