app (file o) work() { "date" @stdout=o; }
file out = @soft_location=location(0, SOFT, NODE) work();
