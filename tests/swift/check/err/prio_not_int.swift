// EXPECT-ERROR: 3: @prio needs an int, not string
app (void) job() { "true"; }
@prio="high" job();
