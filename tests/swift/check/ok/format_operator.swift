import string;
string s = "%i-%s" % (1, "a"); string t = "%i" % 5; trace(s, t);
