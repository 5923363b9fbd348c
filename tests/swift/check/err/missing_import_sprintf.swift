// EXPECT-ERROR: 2: needs 'import string;'
string s = sprintf("%i", 1);
