(int o) work(int i) "pkg" "1.0" "work";
int r = @location=locationFromRank(0) work(3);
trace(r);
