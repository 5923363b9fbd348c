// Swift/T's string functions index characters, bound matches by an end
// index, and split at each delimiter character, as Turbine's Tcl does.
import string;
trace(find("hello world", "world", 0, 10), find("hello world", "world", 0, 11), find("héllo", "l", 0, -1));
trace(string_count("aaaa", "aa", 0, -1), string_count("abcabcabc", "abc", 1, -1));
trace(replace("a-b-c", "-", "+", 2), replace("abc", "", "x", 0));
trace(replaceAll("a-b-c-d", "-", "+"), replaceAll("a-b-c-d", "-", "+", 0, 4), replace_all("a-b-c-d", "-", "+", 2));
string W[] = split("one two three");
trace(size(W), W[2]);
string P[] = split("a,b;c", ",;");
trace(size(P), string_join(P, "+"));
string E[] = split("", ",");
trace(size(E));
string J[] = ["x", "y", "z"];
trace(string_join(J), join(J, "-"), join_args("/", "a", 1, 2.5));
