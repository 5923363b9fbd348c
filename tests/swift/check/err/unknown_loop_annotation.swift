// EXPECT-ERROR: 2: unknown loop annotation
@parallel foreach i in [0:2] { trace(i); }
