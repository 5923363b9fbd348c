// An int compared as a float still differs from 2.5.
import assert;
int x = 2;
assertEqual(x, 2.5, "x is not 2.5");
