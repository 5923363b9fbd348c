string s = "tab\tnewline\nquote\"backslash\\hex\x41"; trace(s);
