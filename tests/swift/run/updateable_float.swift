// updateable_float (Swift/T): changed in place with <incr>, <min>, <scale>
// from any iteration; `wait (x)` sees it final; read elsewhere it is its
// value now.
import assert;
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
  assert(count == 100.0, "count");
}
float snap = count;
trace("snapshot taken", snap >= 0.0);
