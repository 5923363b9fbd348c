// Seed 004, Fig. 1: n writers, each followed by a reader of what it wrote.
import string;
import sys;

app (file file_output) write_file() {
  "examples/bin/write-local.sh" file_output;
}

app (void) read_file(file file_input) {
  "examples/bin/read-local.sh" file_input;
}

int n = toInt(argv("n", "8"));
foreach i in [0:n-1] {
  string file_name = sprintf("/locus/copy/f%i.dat", i);
  file f<file_name> = write_file();
  read_file(f);
}
