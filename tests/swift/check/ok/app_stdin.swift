app (file o) sorted(file i) { "sort" @stdin=i @stdout=o; }
file a<"in.txt">;
file b = sorted(a);
