string s = "a" + "b" + "c"; trace(s);
