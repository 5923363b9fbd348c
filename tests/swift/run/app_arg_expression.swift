import files; import string;
app (file o) e(int k) { "echo" (k * 2) "x" @stdout=o; }
file f = e(21);
trace(trim(read(f)));
