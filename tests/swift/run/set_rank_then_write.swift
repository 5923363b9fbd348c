import files;
set_rank("/locus/p/c.txt", 1) => file f<"/locus/p/c.txt"> = write("x");
trace(read(f));
