// Seed 004 §V.B: count the words of each length in n text files. Per file,
// a map task splits the text into words and a count task counts words per
// length; merge tasks combine the counts pairwise into one file.
// `locus bench mapreduce` runs it in the configurations of seed 004 Fig. 7:
//   --dp=default   map tasks run wherever the balancer puts them; files
//                  are stored where the run's --placement says (the bench
//                  runs DP-def with hash, Hercules' default)
//   --dp=informed  map i runs HARD NODE where input i is (node i % nodes)
//   --tp=agnostic  count and merge tasks run anywhere (with --locality off)
//   --tp=aware     each at get_rank(its first input), --strict and --scope
//   --tp=auto      no annotation: Locus's automatic locality decides
// The inputs are generated first by writers spread evenly over the nodes.
import location;
import string;
import sys;

app (file o) generate(int bytes) {
  "sh" "-c" "head -c $1 /dev/urandom | base64 -w 80 | tr -c 'A-Za-z\\n' ' ' > \"$0\"" o bytes;
}

app (file o) map(file text) {
  "sh" "-c" "tr -cs 'A-Za-z' '\\n' < \"$0\" > \"$1\"" text o;
}

app (file o) count(file words) {
  "sh" "-c" "awk '{ n[length($0)]++ } END { for (l in n) print l, n[l] }' \"$0\" > \"$1\"" words o;
}

app (file o) merge(file a, file b) {
  "sh" "-c" "awk '{ n[$1] += $2 } END { for (l in n) print l, n[l] }' \"$0\" \"$1\" | sort -n > \"$2\"" a b o;
}

(location L) placed(int rank, string strict, string scope) {
  if (strict == "HARD") {
    if (scope == "NODE") { L = location(rank, HARD, NODE); }
    else { L = location(rank, HARD, RANK); }
  } else {
    if (scope == "NODE") { L = location(rank, SOFT, NODE); }
    else { L = location(rank, SOFT, RANK); }
  }
}

// Merges counts[lo..hi] pairwise, next to the first input's data.
(file o) reduce(file counts[], int lo, int hi, string dir, string tp, string strict, string scope) {
  if (lo == hi) {
    o = counts[lo];
  } else {
    int mid = (lo + hi) %/ 2;
    file a = reduce(counts, lo, mid, dir, tp, strict, scope);
    file b = reduce(counts, mid + 1, hi, dir, tp, strict, scope);
    file m<sprintf("%s/merge-%i-%i.txt", dir, lo, hi)>;
    if (tp == "aware") {
      wait (a) {
        m = @location=placed(get_rank(filename(a)), strict, scope) merge(a, b);
      }
    } else {
      m = merge(a, b);
    }
    o = m;
  }
}

main {
  int n = toInt(argv("n", "8"));
  int bytes = toInt(argv("size", "1048576"));
  string dir = argv("dir", "/locus/mapreduce");
  string dp = argv("dp", "default");
  string tp = argv("tp", "agnostic");
  string strict = argv("strict", "HARD");
  string scope = argv("scope", "NODE");
  string hosts[] = hostmapList();
  file counts[];
  foreach i in [0:n-1] {
    // Inputs written evenly over the nodes, as if staged there beforehand
    // (where they are stored is still up to --placement).
    int home = hostmapOneWorkerRank(hosts[i %% size(hosts)]);
    file text<sprintf("%s/in-%i.txt", dir, i)> = @location=location(home, HARD, NODE) generate(bytes);
    file words<sprintf("%s/words-%i.txt", dir, i)>;
    if (dp == "informed") {
      words = @location=location(home, HARD, NODE) map(text);
    } else {
      words = map(text);
    }
    file c<sprintf("%s/count-%i.txt", dir, i)>;
    if (tp == "aware") {
      wait (words) {
        c = @location=placed(get_rank(filename(words)), strict, scope) count(words);
      }
    } else {
      c = count(words);
    }
    counts[i] = c;
  }
  file total = reduce(counts, 0, n - 1, dir, tp, strict, scope);
  wait (total) {
    trace("merged", n, "counts into", filename(total));
  }
}
