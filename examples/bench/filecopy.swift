// Seed 004 §V.A (and seed 001 §3): n write tasks, then a read task of each
// file written. `locus bench filecopy` runs it in the
// configurations of seed 004 Table I:
//   --dp=default   writers run wherever the balancer puts them; the file is
//                  stored where the run's --placement says (the bench runs
//                  DP-def with hash, Hercules' default, and DP-local with
//                  local, the writer's node)
//   --dp=informed  writer i runs HARD NODE on node i % nodes (files spread
//                  evenly over the nodes)
//   --tp=agnostic  readers run anywhere (run with --locality off)
//   --tp=aware     reader placed at get_rank(file) with --strict and --scope
//   --tp=auto      no annotation: Locus's automatic locality decides
// Writers and readers are dd with --chunk-byte blocks, as the seed's C
// tasks; the file reaches dd as a file argument, so Locus maps it to the
// node's store.
import location;
import string;
import sys;

app (file o) write_task(int chunk, int count) {
  "sh" "-c" "exec dd if=/dev/zero of=\"$0\" bs=$1 count=$2 status=none" o chunk count;
}

app (void) read_task(file f, int chunk) {
  "sh" "-c" "exec dd if=\"$0\" of=/dev/null bs=$1 status=none" f chunk;
}

// The location the configuration asks for, at `rank`.
(location L) placed(int rank, string strict, string scope) {
  if (strict == "HARD") {
    if (scope == "NODE") { L = location(rank, HARD, NODE); }
    else { L = location(rank, HARD, RANK); }
  } else {
    if (scope == "NODE") { L = location(rank, SOFT, NODE); }
    else { L = location(rank, SOFT, RANK); }
  }
}

main {
  int n = toInt(argv("n", "8"));
  int bytes = toInt(argv("size", "1048576"));
  int chunk = toInt(argv("chunk", "65536"));
  string dir = argv("dir", "/locus/filecopy");
  string dp = argv("dp", "default");
  string tp = argv("tp", "agnostic");
  string strict = argv("strict", "HARD");
  string scope = argv("scope", "NODE");
  int count = bytes %/ chunk;
  string hosts[] = hostmapList();
  file written[];
  foreach i in [0:n-1] {
    file f<sprintf("%s/f%i.dat", dir, i)>;
    if (dp == "informed") {
      int w = hostmapOneWorkerRank(hosts[i %% size(hosts)]);
      f = @location=location(w, HARD, NODE) write_task(chunk, count);
    } else {
      f = write_task(chunk, count);
    }
    written[i] = f;
  }
  // Every file is written before the first read, so the phases are timed
  // apart.
  wait (written) {
    foreach f in written {
      if (tp == "aware") {
        @location=placed(get_rank(filename(f)), strict, scope) read_task(f, chunk);
      } else {
        read_task(f, chunk);
      }
    }
  }
}
