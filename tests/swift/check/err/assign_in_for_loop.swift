// EXPECT-ERROR: 4: every iteration
int a;
for (i = 0; i < 3; i = i + 1) {
  a = i;
}
