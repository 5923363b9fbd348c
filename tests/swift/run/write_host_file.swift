import files;
file f<"/tmp/locus-run-test-write.txt"> = write("host");
trace(read(f));
