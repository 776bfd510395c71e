/* All-reduce alone: the median time of an in-place MPI_Iallreduce (sum,
 * fp32) of BYTES over all ranks, REPS times after a barrier each, and the
 * bus bandwidth it implies for a ring, 2(N-1)/N x bytes / time.  Run with
 * each algorithm of Open MPI's coll/libnbc to check the cost model of
 * docs/DISTRIBUTED.md (binomial tree: 2 log2(N) x bytes through rank 0).
 * Build: mpicc -O2 bench/mpi_allreduce.c -o mpi_allreduce
 * Usage: mpirun -np N ./mpi_allreduce BYTES [REPS] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const double bytes = argc > 1 ? atof(argv[1]) : 497.9e6;
    const int reps = argc > 2 ? atoi(argv[2]) : 5;
    const size_t n = (size_t)(bytes / sizeof(float));
    float *x = malloc(n * sizeof(float));
    double *t = malloc((size_t)reps * sizeof(double));
    if (!x || !t || n > 2147483647u) {
        fprintf(stderr, "mpi_allreduce: cannot allocate %zu floats\n", n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < n; i++) x[i] = 1.0f;
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        MPI_Request q;
        MPI_Iallreduce(MPI_IN_PLACE, x, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        t[r] = MPI_Wtime() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    const double med = t[reps / 2];
    if (rank == 0)
        printf("ranks %d  bytes %.1f MB  median %.1f ms (min %.1f, max %.1f) over %d  ring-equivalent bus bandwidth %.2f GB/s\n",
               size, bytes / 1e6, med * 1e3, t[0] * 1e3, t[reps - 1] * 1e3, reps,
               2.0 * (size - 1) / size * bytes / med / 1e9);
    free(x);
    free(t);
    MPI_Finalize();
    return 0;
}
