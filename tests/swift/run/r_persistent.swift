// R(code, expr) runs in one persistent R interpreter per worker.
import io;
import R;
string first = R("counter <- 41", "counter + 1");
printf("first %s", first);
printf("vector %s", R("v <- c(1, 2, 3)", "sum(v * 2)"));
