import assert;
assertEqual(1, 2, "numbers");
