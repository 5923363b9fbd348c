app (file o) gen() { "date" @stdout=o; }
string dir = "/locus/run";
file f<dir + "/date.txt"> = gen();
