import assert;
assert(2 < 1, "two is not less than one");
