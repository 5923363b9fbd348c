app (void) nothere() { "/nonexistent/program"; }
nothere();
