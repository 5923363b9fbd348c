// EXPECT-ERROR: 2: unknown type 'gadget'
(int o) f(gadget g) { o = 1; }
