import io;
import io;
printf("once");
