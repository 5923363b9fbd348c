import files;
file f<"/locus/w/a.txt"> = write("data");
trace(lookup(filename(f)));
