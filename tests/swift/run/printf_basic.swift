import io;
printf("%i + %i = %i", 1, 2, 1 + 2);
