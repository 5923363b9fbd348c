import assert;
assert(1 < 2, "ordered");
assertEqual("a" + "b", "ab", "concat");
trace("ok");
