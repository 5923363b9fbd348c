// Floats print as Tcl prints doubles: the fewest digits that read back,
// E format below 1e-4 and from 1e17.
trace(1.0e20, 2.5e-7, 1.0e16, 1.0e17, 0.0001, 0.00001, 1.0 / 3.0, 123456789012345678.0);
trace(fromfloat(1.0e-7), toString(-0.5), inf, -inf);
