// EXPECT-ERROR: 3: @soft_location needs a location, not float
app (void) job() { "true"; }
@soft_location=1.5 job();
