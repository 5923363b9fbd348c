// EXPECT-ERROR: 2: 'trace' does not run as a task
@location=location(0, HARD, RANK) trace(1);
