import files; import string;
app (file o) up(file i) { "tr" "a-z" "A-Z" @stdin=i @stdout=o; }
file a<"/locus/u/in.txt"> = write("shout");
file b = up(a);
trace(read(b));
