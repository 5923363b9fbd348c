app (file o) two() { "echo" "a"; "b" @stdout=o; }
file f = two();
