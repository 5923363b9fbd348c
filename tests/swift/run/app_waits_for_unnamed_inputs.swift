// An app runs once all its inputs are closed, those its command line does
// not name too: `second` is ordered after `first` by the file alone.
import files;
import string;

app (file o) first() {
  "sh" "-c" "sleep 0.5; date +%s%N > $0" o;
}
app (file o) second(file after) {
  "sh" "-c" "date +%s%N > $0" o;
}

file a<"/order/a.txt"> = first();
file b<"/order/b.txt"> = second(a);
trace("second started after first ended:", toint(trim(read(b))) >= toint(trim(read(a))));
