// EXPECT-ERROR: 3: unknown call annotation '@fast'
app (void) job() { "true"; }
@fast job();
