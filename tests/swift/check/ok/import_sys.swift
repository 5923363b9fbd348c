import sys;
string a = argv("name", "default");
int n = argc();
string e = getenv("HOME");
trace(a, n, e);
