trace("top level");
main { trace("main"); }
