// An app runs once all its inputs are closed, those its command line does
// not name too: `second` is ordered after `first` by the file alone. (Locus
// files: each run its own; host files were shared by the corpus's two runs at once.)
import files;
import string;

app (file o) first() {
  "sh" "-c" "sleep 0.5; date +%s%N > $0" o;
}
app (file o) second(file after) {
  "sh" "-c" "date +%s%N > $0" o;
}

file a<"/locus/order/a.txt"> = first();
file b<"/locus/order/b.txt"> = second(a);
trace("second started after first ended:", toint(trim(read(b))) >= toint(trim(read(a))));
