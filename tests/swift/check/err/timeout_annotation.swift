// EXPECT-ERROR: 5: @timeout needs seconds (int or float), not string
// EXPECT-ERROR: 6: @timeout applies to app functions; 'c' does not run as a task
app (void o) a() { "true"; }
(void o) c() { o = a(); }
@timeout="long" a();
@timeout=2 c();
