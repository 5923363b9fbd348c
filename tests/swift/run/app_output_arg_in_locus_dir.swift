import files; import string;
app (file o) cp(file i) { "cp" i o; }
file src<"/locus/d/src.txt"> = write("copied");
file dst<"/locus/d/sub/dst.txt"> = cp(src);
trace(read(dst));
