import files;
file f<"/locus/w/b.txt"> = write("data");
trace(get_rank(filename(f)));
