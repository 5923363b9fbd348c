import files;
file a<"/locus/g/a.dat"> = write("1");
file b<"/locus/g/b.dat"> = write("2");
file c<"/locus/g/c.txt"> = write("3");
wait (a, b, c) { file m[] = glob("/locus/g/*.dat"); trace(size(m), filename(m[0]), filename(m[1])); }
