/* Data-parallel training over MPI (src/dist, built with -DGPT2C_MPI=ON or
 * AUTO when CMake finds MPI; GPT2C_HAVE_MPI is then defined).
 *
 * Every process holds the whole model and trains on its slice of each global
 * batch (gpt2c_dataloader_open_part).  Gradients are summed over processes
 * with MPI_Iallreduce in fixed buckets, started from backward's
 * on_grads_final hook as each layer's gradients become final (overlap), and
 * completed before the update.  Plain data parallel then updates a full copy
 * everywhere; ZeRO-1 (zero = 1) keeps only this rank's 1/N of the AdamW
 * moments, updates that slice of the parameters and all-gathers them.
 *
 * Determinism: the buckets are a function of the model's shape only (the
 * same on every rank, every step), so MPI sees the same sequence of
 * collectives with the same counts each step; Open MPI picks an algorithm
 * from (communicator size, message size) and each algorithm combines the
 * ranks' contributions in a fixed order, so results do not depend on timing
 * or on whether reduction overlapped backward (docs/DISTRIBUTED.md).  The
 * parameters of all ranks are compared (a hash) at every checkpoint. */
#ifndef GPT2C_DIST_H
#define GPT2C_DIST_H

#include <stddef.h>

#include "gpt2c/model.h"
#include "gpt2c/train.h"

typedef struct gpt2c_dist gpt2c_dist;

/* 1 when this process was started by an MPI launcher (mpirun / mpiexec /
 * srun set the environment it checks); needs no MPI library. */
int gpt2c_dist_launched(void);

/* MPI_Init_thread (serialized: the communication thread and this one take
 * turns) on MPI_COMM_WORLD; errors on the communicator return instead of
 * aborting.  With NCCL built, also picks this rank's GPU (local rank modulo
 * the devices), before any backend starts. */
gpt2c_status gpt2c_dist_init(gpt2c_dist **out);
/* MPI_Finalize and free. */
void gpt2c_dist_finalize(gpt2c_dist *d);
/* Ends every rank of the job at once (MPI_Abort), for a failure on one rank
 * that the others cannot know about: they would wait in a collective. */
void gpt2c_dist_abort(gpt2c_dist *d, int code);

int gpt2c_dist_rank(const gpt2c_dist *d);
int gpt2c_dist_size(const gpt2c_dist *d);
/* Ranks on this rank's machine (shared memory), this one included. */
int gpt2c_dist_local_size(gpt2c_dist *d);
/* "host-a (ranks 0-1), host-b (ranks 2-3)" on rank 0 (others: ""); number of hosts */
gpt2c_status gpt2c_dist_hosts(gpt2c_dist *d, char *buf, size_t n, int *nhosts);

/* Every rank says whether it is fine; returns the number of ranks that are
 * not, and in *first_bad the lowest such rank (-1 if none).  A collective:
 * all ranks must call it at the same point. */
int gpt2c_dist_agree(gpt2c_dist *d, int ok, int *first_bad);
/* Broadcasts rank `root`'s message (the failing rank's error) to every rank. */
void gpt2c_dist_bcast_msg(gpt2c_dist *d, int root, char *msg, size_t n);

typedef struct gpt2c_dist_opts {
    int zero;        /* 0: plain data parallel; 1: ZeRO-1 (sharded AdamW moments and update) */
    int overlap;     /* 1: a communication thread reduces buckets during backward (default); 0: after it */
    size_t bucket_floats; /* small tensors of a layer are packed into buckets of at most this many floats */
} gpt2c_dist_opts;
gpt2c_dist_opts gpt2c_dist_opts_default(void);

/* Plans the buckets (and, for ZeRO-1, the shard; moments already in the
 * model, from a resumed checkpoint, are cut down to this rank's shard) and
 * fills *dp for gpt2c_train_cfg.dp.  The model must have its gradients'
 * layout (any model; gradients are allocated here).  Host backends, or
 * the CUDA backend where NCCL is built (plain data parallel: ZeRO-1 is host
 * code). */
gpt2c_status gpt2c_dist_attach(gpt2c_dist *d, gpt2c_model *m, const gpt2c_dist_opts *o, gpt2c_train_dp *dp);

/* Before rank 0 saves a checkpoint: checks every rank holds the same
 * parameters (a hash; a difference fails naming the rank) and, under ZeRO-1,
 * gathers the moment shards into full m_mem / v_mem on rank 0.  After the
 * save, gpt2c_dist_after_save frees them again.  Collectives: all ranks. */
gpt2c_status gpt2c_dist_before_save(gpt2c_dist *d, gpt2c_model *m);
void gpt2c_dist_after_save(gpt2c_dist *d, gpt2c_model *m);

/* Bytes this rank holds for AdamW moments (full, or its ZeRO-1 shard). */
size_t gpt2c_dist_optimizer_bytes(const gpt2c_dist *d, const gpt2c_model *m);

/* Totals since attach: gradient bytes all-reduced by this rank; comm_ms:
 * from the first bucket posted to the last one complete (the all-reduce's
 * span, on the communication thread when overlapping); wait_ms: the part of
 * it the main thread waited for after backward (not hidden); gather_ms:
 * ZeRO-1's parameter all-gather; skew_ms (--overlap 0 only): waiting at a
 * barrier for the slowest rank before the all-reduce (inside wait_ms). */
typedef struct gpt2c_dist_stats {
    double bytes, comm_ms, wait_ms, gather_ms, skew_ms;
    int steps;
    int reduce_scatter; /* ZeRO-1: gradients reduce-scattered (each rank receives its shard's sums) */
    int wte_early;      /* wte's LM-head part reduced from the LM head's backward on (the encoder's rows gathered) */
    int device;         /* NCCL on the device: comm_ms / wait_ms are not measured (the host does not wait; see the profile) */
} gpt2c_dist_stats;
gpt2c_dist_stats gpt2c_dist_get_stats(const gpt2c_dist *d);

#endif
