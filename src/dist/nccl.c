/* NCCL: data parallel on the CUDA backend (built when CMake finds CUDA, MPI
 * and NCCL; GPT2C_HAVE_NCCL).  The gradients stay on the device: the same
 * buckets as the MPI path (reduce.c's plan, in the same order) are summed
 * with ncclAllReduce, in place, on a communication stream of their own.
 * Each group is enqueued when backward's hook says it is final: an event
 * recorded on the compute stream at that point makes the communication
 * stream wait for the kernels that produced it, so the reduction of block l
 * runs on the GPU while blocks l-1 .. 0 still compute.  After backward the
 * compute stream waits for the communication stream (an event again), so the
 * update sees the sums; the host does not block.  MPI carries only the NCCL
 * id at start and the scalar losses.  Packed buckets are not packed here: a
 * bucket's slices are reduced as one NCCL group (one launch).
 *
 * Determinism: NCCL picks its algorithm and protocol (ring / tree, LL / LL128
 * / Simple) from the message size, the rank count and the topology, never
 * from timing, and each is a fixed reduction order; fix them with NCCL_ALGO
 * and NCCL_PROTO to keep the bits the same across machines of other shapes. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"
#include "kernels/cuda/cuda_ops.h"
#include "model/acts.h"
#include "model/memspace.h"

struct gpt2c_dist_nccl {
    ncclComm_t comm;
    cudaStream_t comm_stream;
    cudaEvent_t ready; /* recorded on the compute stream when a group is final */
    cudaEvent_t done;  /* recorded on the communication stream after the last bucket */
};

static gpt2c_status nccl_fail(ncclResult_t r, const char *call) {
    return gpt2c_fail(GPT2C_ERR_IO, "nccl: %s failed: %s", call, ncclGetErrorString(r));
}
static gpt2c_status cuda_fail(cudaError_t e, const char *call) {
    return gpt2c_fail(GPT2C_ERR_IO, "nccl: %s failed: %s", call, cudaGetErrorString(e));
}
#define NCCL_TRY(call)                                              \
    do {                                                            \
        ncclResult_t r_ = (call);                                   \
        if (r_ != ncclSuccess) return nccl_fail(r_, #call);         \
    } while (0)
#define CUDA_TRY(call)                                              \
    do {                                                            \
        cudaError_t e_ = (call);                                    \
        if (e_ != cudaSuccess) return cuda_fail(e_, #call);         \
    } while (0)

void gpt2c_dist_nccl_pick_device(gpt2c_dist *d) {
    /* ranks on one machine take its GPUs in turn (before the backend starts) */
    MPI_Comm local;
    int lrank = 0;
    if (MPI_Comm_split_type(d->comm, MPI_COMM_TYPE_SHARED, d->rank, MPI_INFO_NULL, &local) == MPI_SUCCESS) {
        MPI_Comm_rank(local, &lrank);
        MPI_Comm_free(&local);
    }
    gpt2c_cuda_select_device(lrank);
}

gpt2c_status gpt2c_dist_nccl_attach(gpt2c_dist *d) {
    struct gpt2c_dist_nccl *n = calloc(1, sizeof *n);
    if (!n) return gpt2c_fail(GPT2C_ERR_NOMEM, "nccl: out of memory");
    d->nccl = n;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    int ok = d->rank != 0 || ncclGetUniqueId(&id) == ncclSuccess;
    if (gpt2c_dist_agree(d, ok, NULL)) return gpt2c_fail(GPT2C_ERR_IO, "nccl: rank 0 could not create the NCCL id");
    GPT2C_DIST_MPI(MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, d->comm));
    const ncclResult_t r = ncclCommInitRank(&n->comm, d->size, id, d->rank);
    if (gpt2c_dist_agree(d, r == ncclSuccess, NULL)) {
        if (r == ncclSuccess) ncclCommDestroy(n->comm);
        n->comm = NULL;
        return r != ncclSuccess ? nccl_fail(r, "ncclCommInitRank") : gpt2c_fail(GPT2C_ERR_IO, "nccl: another rank could not join the communicator");
    }
    CUDA_TRY(cudaStreamCreateWithFlags(&n->comm_stream, cudaStreamNonBlocking));
    CUDA_TRY(cudaEventCreateWithFlags(&n->ready, cudaEventDisableTiming));
    CUDA_TRY(cudaEventCreateWithFlags(&n->done, cudaEventDisableTiming));
    return GPT2C_OK;
}

void gpt2c_dist_nccl_free(gpt2c_dist *d) {
    struct gpt2c_dist_nccl *n = d->nccl;
    if (!n) return;
    if (n->comm_stream) cudaStreamSynchronize(n->comm_stream);
    if (n->comm) ncclCommDestroy(n->comm);
    if (n->ready) cudaEventDestroy(n->ready);
    if (n->done) cudaEventDestroy(n->done);
    if (n->comm_stream) cudaStreamDestroy(n->comm_stream);
    free(n);
    d->nccl = NULL;
}

/* Buckets [from, to): after what the compute stream has enqueued so far. */
gpt2c_status gpt2c_dist_nccl_post(gpt2c_dist *d, int from, int to) {
    struct gpt2c_dist_nccl *n = d->nccl;
    gpt2c_model *m = d->m;
    if (from >= to) return GPT2C_OK;
    CUDA_TRY(cudaEventRecord(n->ready, (cudaStream_t)gpt2c_cuda_stream_handle()));
    CUDA_TRY(cudaStreamWaitEvent(n->comm_stream, n->ready, 0));
    float *g = m->grads_mem;
    NCCL_TRY(ncclGroupStart());
    for (int b = from; b < to; b++) {
        const gpt2c_dist_bucket *bk = &d->buckets[b];
        if (bk->gather) { /* wte's rows apart: every rank's encoder rows and tokens */
            const size_t N = (size_t)m->B * (size_t)m->T, C = (size_t)m->cfg.channels;
            if (bk->gather == 1)
                NCCL_TRY(ncclAllGather(m->acts->dres, d->rows_all, N * C, ncclFloat, n->comm, n->comm_stream));
            else
                NCCL_TRY(ncclAllGather(m->acts->tokens, d->tokens_all, N, ncclInt32, n->comm, n->comm_stream));
            continue;
        }
        for (int s = bk->first; s < bk->first + bk->count; s++) {
            float *p = g + d->slices[s].off;
            NCCL_TRY(ncclAllReduce(p, p, d->slices[s].n, ncclFloat, ncclSum, n->comm, n->comm_stream));
        }
        d->stats.bytes += (double)bk->n * sizeof(float);
    }
    NCCL_TRY(ncclGroupEnd());
    return GPT2C_OK;
}

/* The compute stream waits for every bucket (on the device; the host goes on). */
gpt2c_status gpt2c_dist_nccl_wait(gpt2c_dist *d) {
    struct gpt2c_dist_nccl *n = d->nccl;
    CUDA_TRY(cudaEventRecord(n->done, n->comm_stream));
    CUDA_TRY(cudaStreamWaitEvent((cudaStream_t)gpt2c_cuda_stream_handle(), n->done, 0));
    ncclResult_t async = ncclSuccess;
    NCCL_TRY(ncclCommGetAsyncError(n->comm, &async));
    if (async != ncclSuccess) return nccl_fail(async, "a collective (ncclCommGetAsyncError)");
    return GPT2C_OK;
}
