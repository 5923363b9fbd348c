// sleep_trace sleeps on a worker, then traces the rest of its arguments.
sleep_trace(0.1, "slept", 1, 2.5);
trace("first");
