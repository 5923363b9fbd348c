// get_rank of a file not written yet: the node set_rank chose, seen by
// every server's engine (the composite may run on another server).
(int r) ask(string p) { r = get_rank(p); }
set_rank("/locus/p/later.txt", 1) => {
  trace("placed", ask("/locus/p/later.txt"), ask("/locus/p/later.txt"));
}
