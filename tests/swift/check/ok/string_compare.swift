string a = "x"; string b = "y"; trace(a == b, a < b, a != b);
