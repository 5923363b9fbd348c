string names[] = ["x", "y"];
string first = names[0];
trace(first);
