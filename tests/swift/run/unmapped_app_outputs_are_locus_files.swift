import files; import string;
app (file o) gen() { "echo" "tmp" @stdout=o; }
file f = gen();
string n = filename(f);
trace(find(n, "/locus/tmp/", 0, 20));
trace(trim(read(f)));
