() say(string s) { trace(s); }
say("hi");
