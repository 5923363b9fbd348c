// The math and stats modules as Swift/T has them; int literals are taken
// as floats where a float is wanted.
import math;
import stats;
import io;
printf("%.4f %.1f %.1f %.4f", cbrt(27), log10(1000), ln(E ** 2), acos(0));
float mean, std;
(mean, std) = stats([2, 4, 4, 4, 5, 5, 7, 9]);
printf("mean %.1f std %.1f", mean, std);
printf("std %.1f avg %.2f", std([1.0, 3.0]), avg([1, 2]));
