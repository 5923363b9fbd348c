import assert;
assert(1 < 2, "math works");
assertEqual(1 + 1, 2, "sum");
assertLT(1.0, 2.0, "floats");
