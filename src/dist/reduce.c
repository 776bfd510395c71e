/* Gradient all-reduce in fixed buckets, overlapped with backward.
 *
 * Backward calls on_grads_final(layer) when a group's gradients are final
 * (final layernorm, then blocks L-1 .. 0, then the embeddings).  The hook
 * posts that group's buckets (MPI_Iallreduce, in place, sum) and gives MPI a
 * chance to progress the ones already posted (Open MPI moves a nonblocking
 * collective forward only inside MPI calls; there is no progress thread).
 * reduce() posts whatever is left, waits for all and unpacks.  Without
 * overlap the same buckets are posted in the same order after backward: the
 * sequence of collectives, and so the numbers, are the same either way. */
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"
#include "kernels/kernels.h"

/* A slice at least this big is reduced in place as its own message; smaller
 * ones (biases, layernorms) are packed into buckets of opts.bucket_floats. */
#define DIST_INPLACE_MIN (1u << 16)
/* MPI counts are ints: in-place slices are cut into messages of at most this */
#define DIST_MAX_MSG (1u << 28)

gpt2c_dist_opts gpt2c_dist_opts_default(void) {
    return (gpt2c_dist_opts){.zero = 0, .overlap = 1, .bucket_floats = 1u << 20};
}

/* The slices of the gradient slab that become final at group `g`. */
static int group_slices(const gpt2c_model *m, int g, dist_slice *out) {
    const int L = m->cfg.num_layers;
    int n = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        const gpt2c_param_info *pi = &m->info[id];
        const size_t off = pi->byte_offset / sizeof(float); /* the gradient slab is fp32 */
        if (pi->per_layer) {
            if (g < 0 || g >= L) continue;
            const size_t per = pi->numel / (size_t)L;
            out[n++] = (dist_slice){off + (size_t)g * per, per};
        } else {
            const int final_ln = id == GPT2C_P_LNFW || id == GPT2C_P_LNFB;
            if ((final_ln && g == L) || (!final_ln && g == -1)) out[n++] = (dist_slice){off, pi->numel};
        }
    }
    return n;
}

static gpt2c_status plan(gpt2c_dist *d, gpt2c_model *m) {
    const int L = m->cfg.num_layers, ngroups = L + 2;
    const size_t cap_slices = (size_t)ngroups * GPT2C_NUM_PARAM_TENSORS * 4 + m->slab_floats / DIST_MAX_MSG + 16;
    d->slices = calloc(cap_slices, sizeof *d->slices);
    d->buckets = calloc(cap_slices, sizeof *d->buckets);
    if (!d->slices || !d->buckets) return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: out of memory (bucket plan)");
    size_t pack_total = 0;
    dist_slice gs[GPT2C_NUM_PARAM_TENSORS];
    /* pass 1: slices and buckets; pack offsets are recorded in `n` and fixed up below */
    for (int gi = 0; gi < ngroups; gi++) {
        const int g = L - gi; /* L, L-1, ..., 0, -1: the order backward finishes them */
        const int ns = group_slices(m, g, gs);
        int open = -1; /* the packed bucket being filled */
        for (int s = 0; s < ns; s++) {
            if (gs[s].n >= DIST_INPLACE_MIN) {
                for (size_t o = 0; o < gs[s].n; o += DIST_MAX_MSG) {
                    const size_t len = gs[s].n - o < DIST_MAX_MSG ? gs[s].n - o : DIST_MAX_MSG;
                    d->slices[d->nslices] = (dist_slice){gs[s].off + o, len};
                    d->buckets[d->nbuckets++] = (dist_bucket){g, d->nslices++, 1, 0, NULL, len};
                }
                continue;
            }
            if (open < 0 || d->buckets[open].n + gs[s].n > d->opts.bucket_floats) {
                open = d->nbuckets++;
                d->buckets[open] = (dist_bucket){g, d->nslices, 0, 1, NULL, 0};
            }
            /* packed buckets hold consecutive slices: a new bucket starts after the in-place ones */
            if (d->buckets[open].first + d->buckets[open].count != d->nslices) {
                open = d->nbuckets++;
                d->buckets[open] = (dist_bucket){g, d->nslices, 0, 1, NULL, 0};
            }
            d->slices[d->nslices++] = gs[s];
            d->buckets[open].count++;
            d->buckets[open].n += gs[s].n;
            pack_total += gs[s].n;
        }
    }
    d->pack_mem = pack_total ? malloc(pack_total * sizeof(float)) : NULL;
    d->reqs = malloc((size_t)d->nbuckets * sizeof *d->reqs);
    if ((pack_total && !d->pack_mem) || !d->reqs) return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: out of memory (buckets)");
    size_t at = 0;
    for (int b = 0; b < d->nbuckets; b++) {
        d->reqs[b] = MPI_REQUEST_NULL;
        if (d->buckets[b].packed) {
            d->buckets[b].pack = d->pack_mem + at;
            at += d->buckets[b].n;
        }
    }
    return GPT2C_OK;
}

static gpt2c_status post_bucket(gpt2c_dist *d, int b) {
    dist_bucket *bk = &d->buckets[b];
    float *g = d->m->grads_mem, *buf;
    if (bk->packed) {
        size_t at = 0;
        for (int s = bk->first; s < bk->first + bk->count; s++) {
            memcpy(bk->pack + at, g + d->slices[s].off, d->slices[s].n * sizeof(float));
            at += d->slices[s].n;
        }
        buf = bk->pack;
    } else {
        buf = g + d->slices[bk->first].off;
    }
    DIST_MPI(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)bk->n, MPI_FLOAT, MPI_SUM, d->comm, &d->reqs[b]));
    d->stats.bytes += (double)bk->n * sizeof(float);
    return GPT2C_OK;
}

/* Posts every bucket of groups down to `group` (in plan order), then lets
 * MPI progress the posted ones. */
static gpt2c_status post_through(gpt2c_dist *d, int group) {
    while (d->posted < d->nbuckets && d->buckets[d->posted].group >= group) {
        GPT2C_TRY(post_bucket(d, d->posted));
        d->posted++;
    }
    int done = 0;
    DIST_MPI(MPI_Testall(d->posted, d->reqs, &done, MPI_STATUSES_IGNORE));
    return GPT2C_OK;
}

/* Bytes the next post_through(d, group) will post: the profiler scope's bytes. */
static double bytes_through(const gpt2c_dist *d, int group) {
    double n = 0;
    for (int b = d->posted; b < d->nbuckets && d->buckets[b].group >= group; b++) n += (double)d->buckets[b].n;
    return n * sizeof(float);
}

/* on_grads_final: a hook cannot fail, so an error is kept for reduce() */
static void on_grads_final(void *ctx, int layer) {
    gpt2c_dist *d = ctx;
    if (d->hook_error != GPT2C_OK) return;
    uint64_t t0 = gpt2c_now_ns();
    gpt2c_status st = GPT2C_OK;
    GPT2C_PROF_OP(d->m->prof, GPT2C_OP_ALLREDUCE, layer, 0, bytes_through(d, layer), st = post_through(d, layer));
    d->hook_error = st;
    d->stats.post_ms += (gpt2c_now_ns() - t0) / 1e6;
}

static void arm(void *ctx, gpt2c_model *m) {
    gpt2c_dist *d = ctx;
    d->posted = 0;
    d->hook_error = GPT2C_OK;
    if (!d->opts.overlap) return;
    m->on_grads_final = on_grads_final;
    m->grads_final_ctx = d;
    d->armed = 1;
}

static gpt2c_status reduce(void *ctx, gpt2c_model *m, double *loss) {
    gpt2c_dist *d = ctx;
    if (d->armed) {
        m->on_grads_final = NULL;
        m->grads_final_ctx = NULL;
        d->armed = 0;
    }
    GPT2C_TRY(d->hook_error);
    if (d->fail_rank == d->rank && d->fail_step == d->stats.steps)
        return gpt2c_fail(GPT2C_ERR_IO, "injected failure at step %d (GPT2C_DIST_FAIL)", d->stats.steps);
    uint64_t t0 = gpt2c_now_ns();
    gpt2c_status st = GPT2C_OK;
    GPT2C_PROF_OP(m->prof, GPT2C_OP_ALLREDUCE, -1, 0, bytes_through(d, -1), st = post_through(d, -1);
                  if (st == GPT2C_OK) {
                      int err = MPI_Waitall(d->nbuckets, d->reqs, MPI_STATUSES_IGNORE);
                      if (err != MPI_SUCCESS) st = dist_mpi_fail(err, "MPI_Waitall(gradient buckets)");
                  });
    GPT2C_TRY(st);
    for (int b = 0; b < d->nbuckets; b++) { /* unpack */
        const dist_bucket *bk = &d->buckets[b];
        if (!bk->packed) continue;
        size_t at = 0;
        for (int s = bk->first; s < bk->first + bk->count; s++) {
            memcpy(m->grads_mem + d->slices[s].off, bk->pack + at, d->slices[s].n * sizeof(float));
            at += d->slices[s].n;
        }
    }
    double sum = 0;
    DIST_MPI(MPI_Allreduce(loss, &sum, 1, MPI_DOUBLE, MPI_SUM, d->comm));
    *loss = sum / d->size;
    d->stats.wait_ms += (gpt2c_now_ns() - t0) / 1e6;
    d->stats.steps++;
    return GPT2C_OK;
}

static gpt2c_status mean(void *ctx, double *v) {
    gpt2c_dist *d = ctx;
    double sum = 0;
    DIST_MPI(MPI_Allreduce(v, &sum, 1, MPI_DOUBLE, MPI_SUM, d->comm));
    *v = sum / d->size;
    return GPT2C_OK;
}

gpt2c_status gpt2c_dist_attach(gpt2c_dist *d, gpt2c_model *m, const gpt2c_dist_opts *o, gpt2c_train_dp *dp) {
    if (m->params_host)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                          "--backend %s: data parallel reduces host memory; use ref, cpu or blas (NCCL is not built)",
                          m->k->name);
    if (o->zero < 0 || o->zero > 1) return gpt2c_fail(GPT2C_ERR_ARG, "--zero %d: expected 0 or 1", o->zero);
    if (m->slab_floats > (size_t)INT32_MAX)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "mpi: %zu parameters is more than MPI's int counts", m->slab_floats);
    d->m = m;
    d->opts = *o;
    if (d->opts.bucket_floats == 0) d->opts.bucket_floats = gpt2c_dist_opts_default().bucket_floats;
    GPT2C_TRY(gpt2c_model_alloc_grads(m));
    GPT2C_TRY(plan(d, m));
    if (o->zero) GPT2C_TRY(dist_zero_attach(d, m));
    *dp = (gpt2c_train_dp){.rank = d->rank, .nranks = d->size, .ctx = d, .arm = arm, .reduce = reduce,
                           .update = o->zero ? dist_zero_update : NULL, .mean = mean};
    return GPT2C_OK;
}

gpt2c_dist_stats gpt2c_dist_get_stats(const gpt2c_dist *d) { return d->stats; }
