// EXPECT-ERROR: 3: global const 'g' has the name of a function
(int o) g(int i) { o = i; }
global const int g = 3;
