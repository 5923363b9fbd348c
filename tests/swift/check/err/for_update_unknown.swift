// EXPECT-ERROR: 2: 'j' is not a variable of this loop
for (i = 0; i < 3; j = i + 1) { trace(i); }
