import string;
string s = "%s-%i" % ("run", 7);
trace(s);
