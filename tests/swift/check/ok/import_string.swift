import string;
string s = sprintf("%s-%i", "a", 1);
trace(strlen(s), substring(s, 0, 1));
string parts[] = split("a,b", ",");
trace(size(parts));
