import sys;
string out; int code;
(out, code) = system(["/no/such/command", "x"]);
trace(out, code);
