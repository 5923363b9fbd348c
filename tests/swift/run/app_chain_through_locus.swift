import files; import string;
app (file o) gen(int n) { "seq" n @stdout=o; }
app (file o) count(file i) { "wc" "-l" @stdin=i @stdout=o; }
file a<"/locus/c/a"> = gen(7);
file b = count(a);
trace(trim(read(b)));
