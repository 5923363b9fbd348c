// `+=` into a bag or array anywhere an element can be assigned: arrays of
// bags (`A[i] += x`, made on first use), deeper (`G[i][j] += x`), a
// struct's field; `foreach` over each bag.
type rec { string name; int items[]; }
bag<int> ab[];
ab[0] += 3;
ab[0] += 4;
ab[1] += 5;
foreach b, k in ab {
  foreach v in b {
    trace("bag", k, v);
  }
}
rec r;
r.name = "r";
r.items += 10;
r.items += 20;
trace("items", size(r.items), sum_integer(r.items));
bag<string> grid[][];
foreach i in [0:1] {
  foreach j in [0:1] {
    grid[i][j] += "a" + toString(i + j);
    grid[i][j] += "b";
  }
}
foreach row, i in grid {
  foreach cell, j in row {
    trace("cell", i, j, size(cell));
  }
}
