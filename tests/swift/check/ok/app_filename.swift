app (file o) copy(file i) { "cp" @i @o; }
file a<"a.txt">;
file b<"b.txt"> = copy(a);
