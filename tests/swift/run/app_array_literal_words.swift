import files;
// A `[` after a space starts a word of its own (an array literal, spread
// into words); `A[i]` right after a name indexes it.
app (file o) pairs(int i, int A[]) { "echo" [i, i + 1] A[1] [A[0], 7] @stdout=o; }
int B[] = [5, 6];
file f = pairs(1, B);
trace(read(f));
