import files;
file f = input("/locus/missing.txt");
trace(read(f));
