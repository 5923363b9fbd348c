app (void o) t() { "true" }
int p = 1;
@prio=p t();
trace("ok");
