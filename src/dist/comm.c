/* The MPI communicator: start, stop, abort, who is where, agreement. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"
#include "model/memspace.h"
#include "model/model_internal.h"

int gpt2c_dist_launched(void) {
    /* Open MPI, MPICH / Intel MPI (PMI), PMIx launchers, Slurm's srun */
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}

gpt2c_status gpt2c_dist_mpi_fail(int err, const char *call) {
    char reason[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, reason, &len) != MPI_SUCCESS) snprintf(reason, sizeof reason, "error %d", err);
    const char *paren = strchr(call, '(');
    return gpt2c_fail(GPT2C_ERR_IO, "mpi: %.*s failed: %s", paren ? (int)(paren - call) : (int)strlen(call), call, reason);
}

gpt2c_status gpt2c_dist_init(gpt2c_dist **out) {
    *out = NULL;
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    /* serialized: the communication thread and the main thread call MPI in turns, never at once */
    if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return gpt2c_fail(GPT2C_ERR_IO, "mpi: MPI_Init_thread failed (started by mpirun? see docs/DISTRIBUTED.md)");
    if (inited) MPI_Query_thread(&provided);
    gpt2c_dist *d = calloc(1, sizeof *d);
    if (!d) return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: out of memory");
    d->thread_level = provided;
    /* failures come back as codes (reported, then MPI_Abort by the caller) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    d->comm = MPI_COMM_WORLD;
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
    d->fail_rank = d->fail_step = -1;
    const char *f = getenv("GPT2C_DIST_FAIL");
    if (f && sscanf(f, "%d:%d", &d->fail_rank, &d->fail_step) != 2) d->fail_rank = d->fail_step = -1;
#ifdef GPT2C_HAVE_NCCL
    gpt2c_dist_nccl_pick_device(d); /* a rank's GPU: before --backend cuda starts the device */
#endif
    *out = d;
    return GPT2C_OK;
}

static void detach(gpt2c_dist *d) {
    gpt2c_dist_stop_thread(d);
    if (d->m && d->m->grads_final_ctx == d) {
        d->m->on_grads_final = NULL;
        d->m->grads_final_ctx = NULL;
    }
    free(d->slices);
    free(d->buckets);
    free(d->pack_mem);
    if (d->m) {
        gpt2c_mem_free(d->m->k, d->rows_all);
        gpt2c_mem_free(d->m->k, d->tokens_all);
    }
#ifdef GPT2C_HAVE_NCCL
    gpt2c_dist_nccl_free(d);
#endif
    free(d->rs_counts_mem);
    free(d->reqs);
    gpt2c_dist_zero_free(d);
}

void gpt2c_dist_finalize(gpt2c_dist *d) {
    if (!d) return;
    detach(d);
    free(d);
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
}

void gpt2c_dist_abort(gpt2c_dist *d, int code) {
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(d ? d->comm : MPI_COMM_WORLD, code);
}

int gpt2c_dist_rank(const gpt2c_dist *d) { return d ? d->rank : 0; }
int gpt2c_dist_size(const gpt2c_dist *d) { return d ? d->size : 1; }

int gpt2c_dist_local_size(gpt2c_dist *d) {
    MPI_Comm local;
    int n = 1;
    if (MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &local) != MPI_SUCCESS) return 1;
    MPI_Comm_size(local, &n);
    MPI_Comm_free(&local);
    return n;
}

gpt2c_status gpt2c_dist_hosts(gpt2c_dist *d, char *buf, size_t n, int *nhosts) {
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    GPT2C_DIST_MPI(MPI_Get_processor_name(name, &len));
    char *all = d->rank == 0 ? calloc((size_t)d->size, MPI_MAX_PROCESSOR_NAME) : NULL;
    if (d->rank == 0 && !all) return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: out of memory");
    int err = MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0, d->comm);
    if (err != MPI_SUCCESS) {
        free(all);
        return gpt2c_dist_mpi_fail(err, "MPI_Gather(host names)");
    }
    if (n) buf[0] = 0;
    *nhosts = 0;
    if (d->rank != 0) return GPT2C_OK;
    /* runs of consecutive ranks on one host: "a (ranks 0-1), b (ranks 2-3)" */
    size_t used = 0;
    for (int r = 0; r < d->size;) {
        const char *h = all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
        int e = r;
        while (e + 1 < d->size && strcmp(all + (size_t)(e + 1) * MPI_MAX_PROCESSOR_NAME, h) == 0) e++;
        int seen = 0;
        for (int q = 0; q < r && !seen; q++) seen = strcmp(all + (size_t)q * MPI_MAX_PROCESSOR_NAME, h) == 0;
        if (!seen) (*nhosts)++;
        if (used < n) {
            int w = e > r ? snprintf(buf + used, n - used, "%s%s (ranks %d-%d)", r ? ", " : "", h, r, e)
                          : snprintf(buf + used, n - used, "%s%s (rank %d)", r ? ", " : "", h, r);
            if (w > 0) used += (size_t)w;
        }
        r = e + 1;
    }
    free(all);
    return GPT2C_OK;
}

int gpt2c_dist_agree(gpt2c_dist *d, int ok, int *first_bad) {
    int mine[2] = {ok ? 0 : 1, ok ? d->size : d->rank}, sum = 0, minbad = d->size;
    MPI_Allreduce(&mine[0], &sum, 1, MPI_INT, MPI_SUM, d->comm);
    MPI_Allreduce(&mine[1], &minbad, 1, MPI_INT, MPI_MIN, d->comm);
    if (first_bad) *first_bad = sum ? minbad : -1;
    return sum;
}

void gpt2c_dist_bcast_msg(gpt2c_dist *d, int root, char *msg, size_t n) {
    if (n > 1 << 20) n = 1 << 20;
    msg[n - 1] = 0;
    MPI_Bcast(msg, (int)n, MPI_CHAR, root, d->comm);
}
