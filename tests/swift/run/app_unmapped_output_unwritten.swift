import files;
import string;
// As in Swift/T, an output the script did not map is made (empty) before
// the app runs: an app that does not write it still succeeds, and the file
// reads empty. (A mapped output that is not written is still an error:
// app_missing_output.)
app (file o) quiet() { "true" }
app (file o, file e) half() { "sh" "-c" "echo made > $1" "--" o }
file f = quiet();
trace(strlen(read(f)));
file a, b;
(a, b) = half();
trace(trim(read(a)), strlen(read(b)));
