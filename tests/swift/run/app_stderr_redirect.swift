import files; import string;
app (file e) err() { "sh" "-c" "echo oops >&2" @stderr=e; }
file e = err();
trace(trim(read(e)));
