app (file o) work(file i) { "wc" i @stdout=o; }
file inp<"/locus/in.txt">;
location L = location(1, HARD, RANK);
file out = @location=L work(inp);
