// @timeout kills the app that runs too long; the other call has no limit.
app (void o) nap(float s) { "sleep" s; }
@timeout=0.3 nap(30.5);
nap(0.01);
