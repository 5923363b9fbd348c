// EXPECT-ERROR: 2: 'printf' needs 'import io;'
printf("x");
