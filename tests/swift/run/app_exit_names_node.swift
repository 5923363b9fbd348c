app (void o) bad() { "sh" "-c" "exit 5" }
bad();
