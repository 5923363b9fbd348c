import location;
app (file o) r() { "sh" "-c" "echo $LOCUS_RANK" @stdout=o; }
import files; import string;
foreach i in [1:6] { file f = @location=randomWorker() r(); int k = toInt(trim(read(f))); if (k < 0 || k > 1) { trace("bad", k); } else { trace("ok"); } }
