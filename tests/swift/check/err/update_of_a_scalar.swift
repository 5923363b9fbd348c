// EXPECT-ERROR: 3: 'b' is int; only an updateable_float is updated with <incr> :=
int b = 1;
b <incr> := 1;
