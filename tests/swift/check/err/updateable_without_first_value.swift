// EXPECT-ERROR: 2: updateable_float 'a' needs its first value: updateable_float a = 0.0;
updateable_float a;
