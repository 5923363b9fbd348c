string s = "héllo wörld ✓";
trace(s);
