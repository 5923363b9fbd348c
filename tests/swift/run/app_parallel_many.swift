import files;
import string;
app (file o) num(int i) { "echo" i @stdout=o; }
int L[];
foreach i in [1:20] { L[i] = toInt(trim(read(num(i)))); }
trace(sum_integer(L));
