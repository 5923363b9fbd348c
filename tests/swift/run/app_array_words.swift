import files;
app (file o) echo_all(string W[]) { "echo" W @stdout=o; }
file f = echo_all(["x", "y", "z"]);
trace(read(f));
