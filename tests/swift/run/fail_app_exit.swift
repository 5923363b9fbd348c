app (void) broken() { "sh" "-c" "exit 3"; }
broken();
