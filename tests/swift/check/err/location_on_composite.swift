// EXPECT-ERROR: 3: 'f' does not run as a task
(int o) f(int i) { o = i; }
int r = @location=location(0, HARD, RANK) f(1);
