app (void o) t() { "true" }
t() => trace("after app");
