// EXPECT-ERROR: 3: @location needs a location, not int
app (void) job() { "true"; }
@location=3 job();
