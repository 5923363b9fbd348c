import files; import string;
app (file o) r() { "sh" "-c" "echo $LOCUS_NODE" @stdout=o; }
file f = @soft_location=location(0, HARD, NODE) r();
trace(trim(read(f)));
