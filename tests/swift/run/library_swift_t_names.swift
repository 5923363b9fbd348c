// Swift/T's library under its own names and arities.
import io;
import string;
import math;
import sys;
import stats;
main {
  printf("toint %i fromint %s tofloat %.1f fromfloat %s", toint("42"), fromint(7), tofloat("2.5"), fromfloat(1.5));
  printf("parseInt %i %i", parseInt("ff", 16), parseInt("-101", 2));
  printf("pow_integer %.1f ternary %i", pow_integer(2, 10), ternary(false, 1, 2));
  trace("xor", xor(true, false));
  printf("abs %i %.1f log %.1f", abs(-3), abs(-2.5), log(8.0, 2.0));
  printf("upper %s lower %s", toUpper("abc"), toLower("DEF"));
  printf("replaceAll %s count %i", replaceAll("a-b-c", "-", "+"), string_count("abcabcab", "ab", 0, -1));
  trace("isint", isint("12"), isint("12x"));
  string picked[] = pick_regexp("^k", ["abc", "k32", "kb2", "bac"]);
  printf("picked %s", join(picked, " "));
  printf("avg %.2f", avg([1, 2, 4]));
  printf("from floats %s", string_from_floats([1.5, 2.0]));
  printf("workers %i", turbine_workers());
  trace("servers", adlb_servers() >= 1);
  printf("rangestep %i", size(rangestep(0, 10, 5)));
  printf("argp default %s", argp(5, "none"));
  printf("negative %i %i %i %i", -7 %/ 2, -7 %% 2, 7 %/ -2, 7 %% -2);
  argv_accept("mode");
}
