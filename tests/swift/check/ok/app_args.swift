app (file o) repeat(string s, int n) { "sh" "-c" ("yes " + s + " | head -n " + fromInt(n)) @stdout=o; }
file f = repeat("x", 3);
