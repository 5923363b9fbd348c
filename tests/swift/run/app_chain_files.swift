import files;
app (file o) gen() { "printf" "b\na\n" @stdout=o; }
app (file o) srt(file i) { "sort" @stdin=i @stdout=o; }
file s = srt(gen());
string L[] = file_lines(s);
trace(L[0], L[1]);
