app (void o) bad() { "/no/such/program" }
bad();
