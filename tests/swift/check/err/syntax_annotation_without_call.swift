// EXPECT-ERROR: 2: expected a name
@location=L;
