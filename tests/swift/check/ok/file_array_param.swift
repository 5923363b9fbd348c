app (file o) cat(file inputs[]) { "cat" inputs @stdout=o; }
file a<"a.txt">; file b<"b.txt">;
file all[] = [a, b];
file out<"all.txt"> = cat(all);
