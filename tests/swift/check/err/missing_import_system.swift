// EXPECT-ERROR: 4: 'system1' needs 'import sys;'
string o;
int c;
(o, c) = system1("true");
