// Swift/T syntax of issue 41: struct constructors, += at element paths,
// for-loop array variables and body variables in updates, updateable_float.
type person {
  string name;
  int age;
  int events[];
}
type pair { int a; float b; }
type team { person lead; pair score; }

person p = person("Nguyen", 42, [1, 2]);
trace("person", p.name, p.age, p.events[1]);
pair q;
q = pair(1, 2);
trace("pair", q.a, q.b);
trace("inline", pair(3, 4.5).b);
person people[];
people[0] = person("Thelma", 31, [3]);
trace("element", people[0].name, people[0].events[0]);
team t = team(person("Louise", 29, []), pair(7, 0.5));
trace("nested", t.lead.name, t.score.a, size(t.lead.events));
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
int init[] = [1, 2, 3];
for (int A[] = init, int i = 0; i < 3; A = A2, i = i + 1) {
  int A2[];
  foreach v, k in A { A2[k] = v * 2; }
  trace("doubled", i, A[0], A[2]);
}
int N = 5;
for (int j = 0, int count = 0; j < N; j = j + 1, count = count + c) {
  int c;
  if (j %% 2 == 0) { c = 1; } else { c = 0; }
  trace("count", j, count);
}
updateable_float count = 0;
updateable_float lowest = 100;
updateable_float grow = 1.0;
foreach i in [1:100] {
  count <incr> := 1;
  lowest <min> := itof(i) * 2.0;
}
foreach i in [1:3] {
  grow <scale> := 2;
}
wait (count, lowest, grow) {
  trace("final", count, lowest, grow);
  
}
float snap = count;
trace("snapshot taken", snap >= 0.0);
