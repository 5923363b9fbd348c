import io;
printf("%i %s", 1, "x");
