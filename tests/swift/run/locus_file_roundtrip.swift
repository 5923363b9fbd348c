// An app writes a mapped Locus file; another reads it; the engine reads both.
import files;
app (file o) gen(string s) { "echo" s @stdout=o; }
app (file o) upper(file i) { "tr" "a-z" "A-Z" @stdin=i @stdout=o; }
file f<"/locus/out/x.txt"> = gen("hello locus");
file g<"/locus/out/y.txt"> = upper(f);
trace(read(f), read(g), file_size(g), file_exists(filename(f)));
