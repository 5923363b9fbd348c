// EXPECT-ERROR: 3: argument 2 of 'assertEqual' must be int, not string
import assert;
assertEqual(1, "1", "mixed");
