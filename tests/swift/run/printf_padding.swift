import io;
printf("[%5i][%-3s][%.2f]", 42, "ab", 3.14159);
