// Swift/T's files module: path functions as Tcl's `file` command, file_lines
// and file_chunks as Turbine reads them, arrays written as lines, mktemp.
import files;
import io;
import string;
string p = "/locus/corpus/files/a.tar.gz";
printf("%s|%s|%s|%s", dirname_string(p), basename_string(p), rootname_string(p), extension_string(p));
printf("%s|%s", dirname_string("x"), realpath_string("/locus/a/./b/../c"));
file t <"/locus/corpus/files/lines.txt"> = write("one\n\n  two # note\n# all\nthree\n----\nfour\n");
string L[] = file_lines(t);
foreach v, k in L { printf("line %i=%s", k, v); }
string C[] = file_chunks(t);
printf("chunks=%i first=%s last=%s", size(C), replace_all(C[0], "\n", "+", 0), C[1]);
printf("%s|%s", basename(t), extension(t));
string A[] = ["x", "y"];
file o <"/locus/corpus/files/ordered.txt"> = write_array_string_ordered(A);
file kv <"/locus/corpus/files/kv.txt"> = write_array_string(A, 1);
printf("ordered=%s kv=%s", replace_all(read(o), "\n", ";", 0), replace_all(read(kv), "\n", ";", 0));
string tmp = mktemp_string();
trace("tmp exists", file_exists(tmp));
