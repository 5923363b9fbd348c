app (file o) count() { "seq" 1 10 @stdout=o; }
file f = count();
