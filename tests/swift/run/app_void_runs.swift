app (void) ok() { "true"; }
ok() => trace("after");
