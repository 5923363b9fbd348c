app (void o) t() { "true" }
@location=location(-1, HARD, RANK) t();
