/* A small MPI simulation for examples/par-simulate.swift and the @par tests:
 * every rank reads the parameters file, the ranks agree on a checksum
 * (MPI_Allreduce), and rank r writes the output file named by argument
 * 2 + r. A rank whose number is in $PAR_SIM_FAIL_RANK exits 3 while the
 * file $PAR_SIM_FAIL_ONCE does not exist yet (made then): a first attempt
 * that fails and a retry that succeeds. $PAR_SIM_SECONDS makes each rank
 * work that long first; $PAR_SIM_BYTES makes each output that much larger. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 2 + size) {
        if (rank == 0)
            fprintf(stderr, "usage: par-sim PARAMS OUT0 .. OUT%d\n", size - 1);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *fail = getenv("PAR_SIM_FAIL_RANK");
    const char *once = getenv("PAR_SIM_FAIL_ONCE");
    if (fail && atoi(fail) == rank && once && access(once, F_OK) != 0) {
        FILE *mark = fopen(once, "w");
        if (mark)
            fclose(mark);
        fprintf(stderr, "rank %d fails on purpose\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    const char *seconds = getenv("PAR_SIM_SECONDS");
    if (seconds)
        usleep((useconds_t)(atof(seconds) * 1e6));
    FILE *in = fopen(argv[1], "r");
    long bytes = 0;
    if (in) {
        while (fgetc(in) != EOF)
            bytes++;
        fclose(in);
    }
    long total = 0;
    MPI_Allreduce(&bytes, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    char host[256] = "";
    gethostname(host, sizeof host);
    FILE *out = fopen(argv[2 + rank], "w");
    if (!out) {
        perror(argv[2 + rank]);
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    fprintf(out, "rank %d of %d on %s node %s: %ld parameter bytes in all\n", rank, size,
            host, getenv("LOCUS_NODE") ? getenv("LOCUS_NODE") : "?", total);
    const char *pad = getenv("PAR_SIM_BYTES");
    for (long i = 0, n = pad ? atol(pad) : 0; i < n; i++)
        fputc('.', out);
    fclose(out);
    MPI_Finalize();
    return 0;
}
