import files; import string;
app (file o) cat(file f[]) { "cat" f @stdout=o; }
file a<"/locus/arr/a"> = write("A");
file b<"/locus/arr/b"> = write("B");
file fs[] = [a, b];
file o = cat(fs);
trace(read(o));
