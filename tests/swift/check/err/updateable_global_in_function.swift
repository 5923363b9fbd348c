// EXPECT-ERROR: 3: 'G' is a top-level variable: a function updates an updateable_float given to it as an argument
updateable_float G = 1.0;
f() { G <incr> := 1.0; }
f();
