// What a job staged in (/locus/inputs), each file counted on the node that
// holds it, as seed 001 places tasks: `lookup` asks the file system which
// host holds a file, `ip2rank` turns that host into a location on it.
// Results go to /locus/output, named after their inputs
// (inputs/3.txt -> output/3.txt.count).
import files;
import location;
import string;

app (file o) count(file f) {
  // The count only: `wc -c FILE` would print where the file is stored.
  "sh" "-c" "wc -c < \"$0\"" f @stdout=o;
}

main {
  file inputs[] = glob("/locus/inputs/*");
  foreach f in inputs {
    string filename = filename(f);
    location L = ip2rank(lookup(filename));
    string name = basename_string(filename);
    file counted<sprintf("/locus/output/%s.count", name)> = @location=L count(f);
  }
  trace("counted", size(inputs), "inputs where they live");
}
