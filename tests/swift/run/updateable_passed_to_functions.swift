// An updateable_float given to a composite function is updated by it, in
// the caller's variable (Swift/T passes it for writing): a `wait` on it
// waits for those calls too, and calls pass it on.
import io;
add(updateable_float acc, float v) {
  acc <incr> := v;
}
nested(updateable_float acc) {
  add(acc, 10.0);
  add(acc, 20.0);
}
(float seen) peek(updateable_float acc) {
  seen = acc;
}
updateable_float total = 0.0;
foreach i in [1:4] {
  add(total, itof(i));
}
nested(total);
wait (total) {
  printf("total %.1f", total);
}
float early = peek(total);
