main() { trace("old style main"); }
