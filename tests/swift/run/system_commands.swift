// Swift/T's system(argv) and system1(command): the command's output (its
// last newline dropped) and exit code; a failing command does not fail the
// run.
import io;
import string;
import sys;
string out; int code;
(out, code) = system(["printf", "%s\n", "a b"]);
printf("system out=[%s] code=%i", out, code);
string o1; int c1;
(o1, c1) = system1("echo one; echo two; exit 3");
printf("system1 out=[%s] code=%i", o1, c1);
string lines[] = split(o1, "\n");
printf("lines %i", size(lines));
