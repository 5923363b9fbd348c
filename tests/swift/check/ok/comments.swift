// line comment
# hash comment
/* block
   comment */
int x = 1; // trailing
trace(x);
