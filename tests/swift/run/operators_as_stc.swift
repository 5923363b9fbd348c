// Swift/T's operator table (STC's Operators): a power is a float, of ints
// too; `+` of a string and a number joins the number's text.
int big = 2;
trace(2 ** 8, big ** -2);
trace("n=" + 1, 2.5 + "x", "a" + big + "b");
