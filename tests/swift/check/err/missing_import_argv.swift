// EXPECT-ERROR: 2: needs 'import sys;'
string a = argv("x");
