// Seed 004, Fig. 3: files placed over the nodes (set_rank), and both tasks
// of each pair placed, best effort, where the file lives. The seed used
// rank i %% nodes; here a worker of node i %% nodes, so the files spread
// over the nodes whatever the number of workers per node.
import location;
import string;
import sys;

app (file file_output) write_file() {
  "examples/bin/write-local.sh" file_output;
}

app (void) read_file(file file_input) {
  "examples/bin/read-local.sh" file_input;
}

int n = toInt(argv("n", "8"));
string hosts[] = hostmapList();
foreach i in [0:n-1] {
  string file_name = sprintf("/locus/copy/f%i.dat", i);
  set_rank(file_name, hostmapOneWorkerRank(hosts[i %% size(hosts)])) => {
    int rank1 = get_rank(file_name);
    location L1 = location(rank1, SOFT, RANK);
    file f<file_name> = @location=L1 write_file();
    int rank2 = get_rank(filename(f));
    location L2 = location(rank2, SOFT, RANK);
    @location=L2 read_file(f);
  }
}
