// Swift/T's location module: the *Rank functions give ranks, the others
// HARD RANK locations of the same workers.
import location;
import files;
import string;
app (file o) where() { "sh" "-c" "echo $LOCUS_RANK > $1" "--" o }
int r = hostmapOneWorkerRank("node0");
trace(r, hostmapOneRank("node0") == r);
foreach l in [hostmapOneWorker("node0"), hostmapOne("node0"), location_from_rank(r), rank2location(r)] {
  file f = @location=l where();
  trace(trim(read(f)) == fromint(r));
}
trace(randomWorkerRank() >= 0);
