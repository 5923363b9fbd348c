import files;
import sys;
file l<"/locus/corpus/readfile.txt"> = writeFile("locus bytes\n");
trace(readFile(l), file_type(l), file_type(input("/tmp")), file_type(input("/etc/passwd")));
wait (l) {
  // Written moments ago, by this host's clock.
  trace(clock_seconds() - file_mtime("/locus/corpus/readfile.txt") < 60,
        file_mtime("/etc/passwd") > 0);
}
