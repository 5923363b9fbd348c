// Seed 001, Fig. 4: run each task on the node that holds its input file.
// `lookup` asks the file system which host holds a file; `ip2rank` turns that
// host into a location on it.
import files;
import string;

app (file o) application(file f) {
  "wc" "-c" f @stdout=o;
}

main {
  file fileArray[] = glob("/locus/input/*.dat");
  foreach f, i in fileArray {
    string filename = filename(f);
    string host = lookup(filename);
    location L = ip2rank(host);
    file counted<sprintf("/locus/output/%i.count", i)> = @location=L application(f);
  }
}
