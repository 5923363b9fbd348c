app (void o) t() { "true" }
@location=location(99, SOFT, NODE) t();
