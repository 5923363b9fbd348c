import files;
file f<"/locus/data/s.txt"> = write("12345");
trace(file_size(f));
