app (file o, file e) run() { "ls" "/nonexistent" @stdout=o @stderr=e; }
file o, e;
(o, e) = run();
