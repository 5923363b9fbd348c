// EXPECT-ERROR: 3: unknown update <plus>; the updates are <incr>, <scale> and <min>
updateable_float c = 0;
c <plus> := 1;
