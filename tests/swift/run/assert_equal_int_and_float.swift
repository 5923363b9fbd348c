// Arguments that share one type, ints and floats mixed (assertEqual's):
// the ints are converted to float, as Swift/T does.
import assert;
int x = 2;
assertEqual(x, 2.0, "x");
assertEqual(2.0, x, "y");
assertEqual(3, 3, "z");
trace("ok");
