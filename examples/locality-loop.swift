// Seed 001, Fig. 4: run each task on the node that holds its input file.
// `lookup` asks the file system which host holds a file; `ip2rank` turns that
// host into a location on it. The first loop makes the inputs, spread over
// the nodes, so the example runs on a fresh cluster.
import files;
import location;
import string;
import sys;

app (file o) make_input(int kib) {
  "head" "-c" (kib * 1024) "/dev/urandom" @stdout=o;
}

app (file o) application(file f) {
  "wc" "-c" f @stdout=o;
}

main {
  int n = toInt(argv("n", "16"));
  string hosts[] = hostmapList();
  file made[];
  foreach i in [0:n-1] {
    int r = hostmapOneWorkerRank(hosts[i %% size(hosts)]);
    file d<sprintf("/locus/input/%i.dat", i)> = @location=location(r, HARD, NODE) make_input(256);
    made[i] = d;
  }
  wait (made) {
    file fileArray[] = glob("/locus/input/*.dat");
    foreach f, i in fileArray {
      string filename = filename(f);
      string host = lookup(filename);
      location L = ip2rank(host);
      // Named after its input: /locus/input/9.dat -> /locus/output/9.count.
      string name = basename_string(rootname_string(filename));
      file counted<sprintf("/locus/output/%s.count", name)> = @location=L application(f);
    }
    trace("counted", size(fileArray), "files where they live");
  }
}
