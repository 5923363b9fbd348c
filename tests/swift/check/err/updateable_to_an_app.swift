// EXPECT-ERROR: 2: only composite functions take an updateable_float
app (file o) f(updateable_float x) { "echo" o }
