// Seed 003, Fig. 3: dock every pair of molecules, score each result, merge
// the scores. Small shell stand-ins replace the real programs.
import string;
import files;

app (file f_output) dock(file f_in1, file f_in2) {
  "examples/bin/docking.sh" f_in1 f_in2 f_output;
}

app (file f_output) match(file f_input) {
  "examples/bin/match.sh" f_input f_output;
}

app (file f_results) merge(file f_input[]) {
  "cat" f_input @stdout=f_results;
}

main {
  file fin[] = glob("examples/data/*.pdb");
  file f_match[];
  int n = size(fin);
  foreach fin1, i in fin {
    foreach fin2, j in fin {
      file f_tmp = dock(fin1, fin2);
      int index = i * n + j;
      f_match[index] = match(f_tmp);
    }
  }
  file f_out<"/locus/docking/results.out"> = merge(f_match);
}
