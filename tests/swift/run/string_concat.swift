string a = "foo"; string b = a + "bar";
trace(b, strcat(a, 1, 2.5));
