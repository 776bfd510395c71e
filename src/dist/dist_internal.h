/* Shared by src/dist: the communicator, the bucket plan, the ZeRO-1 shard. */
#ifndef GPT2C_DIST_INTERNAL_H
#define GPT2C_DIST_INTERNAL_H

#include <mpi.h>
#include <pthread.h>
#include <stdint.h>

#include "gpt2c/dist.h"

/* One all-reduce: either one slice of the gradient slab reduced in place, or
 * several small slices packed into `pack` (copied in before, out after). */
typedef struct gpt2c_dist_bucket {
    int group;          /* the on_grads_final layer whose gradients it holds */
    int gather;         /* 0: gradients; 1 / 2: all-gather of the encoder's rows / tokens (wte's rows apart) */
    int first, count;   /* its slices: slices[first .. first+count) */
    int packed;         /* 0: one slice reduced in place */
    float *pack;        /* packed: the slices copied here */
    size_t n;           /* floats reduced */
    /* ZeRO-1 reduce-scatter: every rank's part of the bucket (its elements that
     * fall in the rank's shard of the slab, contiguous in bucket order); this
     * rank's part starts at the bucket's element rs_first */
    int rs;             /* 1: reduce-scatter, 0: all-reduce */
    int *rs_counts;     /* [size] */
    size_t rs_first;
} gpt2c_dist_bucket;

typedef struct gpt2c_dist_slice {
    size_t off, n; /* floats, into the gradient slab */
} gpt2c_dist_slice;

struct gpt2c_dist {
    MPI_Comm comm;
    int rank, size;
    gpt2c_model *m;
    gpt2c_dist_opts opts;
    /* bucket plan, in posting order (final layernorm, blocks L-1..0, embeddings) */
    gpt2c_dist_slice *slices;
    int nslices;
    gpt2c_dist_bucket *buckets;
    int nbuckets;
    float *pack_mem;
    /* wte's gradient early: its LM-head part is reduced from group L+1 on,
     * the encoder's rows (acts->dres, B*T x C) and tokens of every rank are
     * all-gathered after backward and added to it, in rank order */
    int wte_early;
    size_t rows_n;       /* B*T the row buffers hold (per rank) */
    float *rows_all;     /* [size][B*T][C] */
    int32_t *tokens_all; /* [size][B*T] */
    MPI_Request *reqs; /* one per bucket */
    int posted;        /* buckets posted this step (by the comm thread while a step is active) */
    int armed;         /* on_grads_final is set for this step */
    /* overlap: a communication thread posts each group's buckets as backward
     * finishes it and drives MPI's progress; the main thread makes no MPI call
     * while a step's reduction is active (MPI_THREAD_SERIALIZED) */
    int have_thread;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready;         /* lowest group final so far (num_layers + 1: none); atomic */
    int active, finished, quit;
    gpt2c_status thread_status;
    char thread_msg[512];
    uint64_t t_first_post;
    /* ZeRO-1: this rank's part [lo, hi) of the slab and its moments */
    size_t lo, hi;
    float *m_shard, *v_shard;
    int *counts, *displs; /* every rank's part, for the all-gather */
    int rs;                /* ZeRO-1 gradients by reduce-scatter (default; GPT2C_DIST_ZERO_ALLREDUCE=1: all-reduce) */
    int *rs_counts_mem;
    int moments_gathered;  /* rank 0 holds full m_mem / v_mem for a save */
    int thread_level;      /* what MPI_Init_thread provided */
    /* a device backend (NCCL, nccl.c): the buckets are reduced on the device */
    struct gpt2c_dist_nccl *nccl;
    gpt2c_status nccl_status; /* of the posts from backward's hook */
    /* fault injection for the tests: GPT2C_DIST_FAIL=rank:step */
    int fail_rank, fail_step;
    gpt2c_dist_stats stats;
};

/* A status from an MPI error code: names the call and MPI's reason. */
gpt2c_status gpt2c_dist_mpi_fail(int err, const char *call);
#define GPT2C_DIST_MPI(call)                                                   \
    do {                                                                 \
        int err_ = (call);                                               \
        if (err_ != MPI_SUCCESS) return gpt2c_dist_mpi_fail(err_, #call);      \
    } while (0)

void gpt2c_dist_stop_thread(gpt2c_dist *d);

/* NCCL (nccl.c, GPT2C_HAVE_NCCL): this rank's GPU (before the backend
 * starts), the communicator, buckets [from, to) enqueued after the compute
 * stream's work so far, the compute stream waiting for all of them. */
void gpt2c_dist_nccl_pick_device(gpt2c_dist *d);
gpt2c_status gpt2c_dist_nccl_attach(gpt2c_dist *d);
gpt2c_status gpt2c_dist_nccl_post(gpt2c_dist *d, int from, int to);
gpt2c_status gpt2c_dist_nccl_wait(gpt2c_dist *d);
void gpt2c_dist_nccl_free(gpt2c_dist *d);

/* ZeRO-1 (zero.c) */
gpt2c_status gpt2c_dist_zero_attach(gpt2c_dist *d, gpt2c_model *m);
gpt2c_status gpt2c_dist_zero_update(void *ctx, gpt2c_model *m, const gpt2c_adamw_cfg *o, float lr, float *norm);
void gpt2c_dist_zero_free(gpt2c_dist *d);
/* rank r's part [lo, hi) of n floats (whole 64-byte lines) */
void gpt2c_dist_part(size_t n, int size, int r, size_t *lo, size_t *hi);

#endif
