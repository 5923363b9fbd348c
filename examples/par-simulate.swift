// Parallel tasks: eight MPI simulations of two ranks each (`@par=2`), each
// followed by sixteen analyses of its outputs. A simulation's workers are
// gathered on as few nodes as can hold it, its ranks start as one MPI job
// (mpiexec here; the run's own launcher under Slurm or Hydra), and each
// rank's output stays on the node where it wrote it: the analyses run
// there (automatic locality). examples/bin/par-sim is par-sim.c built with
// MPICH's mpicc (`make examples/bin/par-sim`).
//
//   locus run -n 9 --nodes 4 examples/par-simulate.swift
import files;
import string;
import sys;

app (file a, file b) simulate(file params) {
  "env" "PAR_SIM_BYTES=1000000" "examples/bin/par-sim" params a b;
}

// The bytes of a simulation's output from `offset` on.
app (file o) analyze(file part, int offset) {
  "sh" "-c" "tail -c +$1 \"$0\" | wc -c" part offset @stdout=o;
}

main {
  int sims = toInt(argv("sims", "8"));
  int reads = toInt(argv("reads", "16"));
  foreach s in [0:sims-1] {
    file p <sprintf("/locus/par/%i/params.txt", s)> = write(sprintf("simulation %i\n", s));
    file a <sprintf("/locus/par/%i/rank0.dat", s)>;
    file b <sprintf("/locus/par/%i/rank1.dat", s)>;
    (a, b) = @par=2 simulate(p);
    file parts[] = [a, b];
    foreach k in [0:reads-1] {
      file o <sprintf("/locus/par/%i/analysis-%i.txt", s, k)> = analyze(parts[k %% 2], k * 1000);
    }
  }
}
