// Seed 004, Fig. 3: files placed round-robin over the nodes (set_rank), and
// both tasks of each pair placed, best effort, where the file lives.
import string;
import sys;

app (file file_output) write_file() {
  "examples/bin/write-local.sh" file_output;
}

app (void) read_file(file file_input) {
  "examples/bin/read-local.sh" file_input;
}

int n = toInt(argv("n", "8"));
int nnodes = toInt(argv("nodes", "4"));
foreach i in [0:n-1] {
  string file_name = sprintf("/locus/copy/f%i.dat", i);
  set_rank(file_name, i %% nnodes);
  int rank1 = get_rank(file_name);
  location L1 = location(rank1, SOFT, RANK);
  file f<file_name> = @location=L1 write_file();
  int rank2 = get_rank(file_name);
  location L2 = location(rank2, SOFT, RANK);
  @location=L2 read_file(f);
}
