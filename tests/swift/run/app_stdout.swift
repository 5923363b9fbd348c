import files;
app (file o) greet(string who) { "echo" "hello" who @stdout=o; }
file g = greet("world");
trace(read(g));
