import string;
trace(strlen("hello"), substring("hello", 1, 3), find("hello", "l", 0, -1), toupper("ab"));
string P[] = split("a,b,c", ",");
trace(size(P), string_join(P, "+"));
