// EXPECT-ERROR: 3: needs a location, not string
app (void) job() { "true"; }
@location="node1" job();
