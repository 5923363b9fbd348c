// EXPECT-ERROR: 3: function 'f' is defined twice
(int o) f() { o = 1; }
(int o) f() { o = 2; }
