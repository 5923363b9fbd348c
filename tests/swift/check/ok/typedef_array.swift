typedef names string[];
names N = ["a", "b"];
trace(size(N));
