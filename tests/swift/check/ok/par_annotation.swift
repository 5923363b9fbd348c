app (void) job() { "true"; }
@par=2 job();
