// EXPECT-ERROR: 2: only files can be mapped, not int
int x<"name.txt">;
