app (void o) t() { "true" }
@location=location(2, HARD, RANK) t();
