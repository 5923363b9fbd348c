import string;
app (file o) gen(int i) { "echo" i @stdout=o; }
foreach i in [0:3] { file f<sprintf("out-%i.txt", i)> = gen(i); }
