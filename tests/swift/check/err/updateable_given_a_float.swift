// EXPECT-ERROR: 4: argument 1 of 'add' must be updateable_float, not float
add(updateable_float acc, float v) { acc <incr> := v; }
float x = 1.0;
add(x, 2.0);
