// EXPECT-ERROR: 3: 'system1' returns 2 results, 1 expected
import sys;
string o = system1("true");
