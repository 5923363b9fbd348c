// iterate/until, for loops over an outer variable and with several
// variables, int conditions, empty statements.
import io;
main {
  iterate v {
    printf("v %i", v);
  } until (v >= 2);
  ;
  int i;
  for (i = 0; i < 2; i = i + 1) { printf("i %i", i); }
  for (int k = 0, j = 1; k < 3; k = k + 1, j = j * 2) { printf("k %i j %i", k, j); }
  int c = 5;
  if (c) { printf("int condition"); } else { printf("never"); }
  if (c - 5) { printf("never"); } else { printf("zero is false"); }
  ;;
}
