// EXPECT-ERROR: 2: only calls can be statements
1 + 2;
