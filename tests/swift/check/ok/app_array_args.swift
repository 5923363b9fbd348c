app (file o) echo_all(string words[]) { "echo" words @stdout=o; }
string W[] = ["a", "b"];
file f = echo_all(W);
