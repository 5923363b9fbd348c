app (file o) gen() { "echo" "x" @stdout=o; }
file f<"/locus/out/x.txt"> = gen();
