/* Gradient all-reduce in fixed buckets, overlapped with backward.
 *
 * Backward calls on_grads_final(layer) when a group's gradients are final
 * (final layernorm, then blocks L-1 .. 0, then the embeddings); each group's
 * buckets are then all-reduced (MPI_Iallreduce, in place, sum) by a
 * communication thread while backward goes on.  reduce() waits for the last
 * one and unpacks.  Without overlap the same buckets are posted in the same
 * order after backward: the sequence of collectives, and so the numbers, are
 * the same either way. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"
#include "kernels/kernels.h"
#include "model/acts.h"
#include "model/memspace.h"
#include "model/model_internal.h"

/* A slice at least this big is reduced in place as its own message; smaller
 * ones (biases, layernorms) are packed into buckets of opts.bucket_floats. */
#define DIST_INPLACE_MIN (1u << 16)
/* MPI counts are ints: in-place slices are cut into messages of at most this */
#define DIST_MAX_MSG (1u << 28)

gpt2c_dist_opts gpt2c_dist_opts_default(void) {
    return (gpt2c_dist_opts){.zero = 0, .overlap = 1, .bucket_floats = 1u << 20};
}

/* The slices of the gradient slab that become final at group `g`
 * (L+1: wte when its rows are apart; L: final layernorm; blocks; -1: the rest). */
static int group_slices(const gpt2c_model *m, int g, int wte_early, gpt2c_dist_slice *out) {
    const int L = m->cfg.num_layers;
    int n = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        const gpt2c_param_info *pi = &m->info[id];
        const size_t off = pi->byte_offset / sizeof(float); /* the gradient slab is fp32 */
        if (pi->per_layer) {
            if (g < 0 || g >= L) continue;
            const size_t per = pi->numel / (size_t)L;
            out[n++] = (gpt2c_dist_slice){off + (size_t)g * per, per};
        } else {
            const int final_ln = id == GPT2C_P_LNFW || id == GPT2C_P_LNFB;
            const int wte = id == GPT2C_P_WTE, early = wte && wte_early;
            if ((final_ln && g == L) || (early && g == L + 1) || (!final_ln && !early && g == -1))
                out[n++] = (gpt2c_dist_slice){off, pi->numel};
        }
    }
    return n;
}

static gpt2c_status plan(gpt2c_dist *d, gpt2c_model *m) {
    const int L = m->cfg.num_layers, ngroups = L + 3;
    const size_t cap_slices = (size_t)ngroups * GPT2C_NUM_PARAM_TENSORS * 4 + m->slab_floats / DIST_MAX_MSG + 16;
    d->slices = calloc(cap_slices, sizeof *d->slices);
    d->buckets = calloc(cap_slices, sizeof *d->buckets);
    if (!d->slices || !d->buckets) return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: out of memory (bucket plan)");
    size_t pack_total = 0;
    gpt2c_dist_slice gs[GPT2C_NUM_PARAM_TENSORS];
    /* pass 1: slices and buckets; pack offsets are recorded in `n` and fixed up below */
    for (int gi = 0; gi < ngroups; gi++) {
        const int g = L + 1 - gi; /* L+1, L, ..., 0, -1: the order backward finishes them */
        const int ns = group_slices(m, g, d->wte_early, gs);
        int open = -1; /* the packed bucket being filled */
        for (int s = 0; s < ns; s++) {
            if (gs[s].n >= DIST_INPLACE_MIN) {
                for (size_t o = 0; o < gs[s].n; o += DIST_MAX_MSG) {
                    const size_t len = gs[s].n - o < DIST_MAX_MSG ? gs[s].n - o : DIST_MAX_MSG;
                    d->slices[d->nslices] = (gpt2c_dist_slice){gs[s].off + o, len};
                    d->buckets[d->nbuckets++] = (gpt2c_dist_bucket){.group = g, .first = d->nslices++, .count = 1, .n = len};
                }
                continue;
            }
            if (open < 0 || d->buckets[open].n + gs[s].n > d->opts.bucket_floats) {
                open = d->nbuckets++;
                d->buckets[open] = (gpt2c_dist_bucket){.group = g, .first = d->nslices, .packed = 1};
            }
            /* packed buckets hold consecutive slices: a new bucket starts after the in-place ones */
            if (d->buckets[open].first + d->buckets[open].count != d->nslices) {
                open = d->nbuckets++;
                d->buckets[open] = (gpt2c_dist_bucket){.group = g, .first = d->nslices, .packed = 1};
            }
            d->slices[d->nslices++] = gs[s];
            d->buckets[open].count++;
            d->buckets[open].n += gs[s].n;
            pack_total += gs[s].n;
        }
    }
    if (d->wte_early) { /* then the rows and tokens, after the last gradients */
        d->buckets[d->nbuckets++] = (gpt2c_dist_bucket){.group = -1, .gather = 1};
        d->buckets[d->nbuckets++] = (gpt2c_dist_bucket){.group = -1, .gather = 2};
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

/* ---- ZeRO-1: reduce-scatter ---------------------------------------------
 * Each rank needs the summed gradients of its own shard [lo_r, hi_r) only, so
 * a bucket is reduce-scattered: rank r receives the sum of the bucket's
 * elements that lie in its shard.  MPI_Reduce_scatter gives rank r the r-th
 * run of the bucket's elements, so the elements of each rank must be one run:
 * true when the bucket's slices are in increasing slab order (the shards are
 * in rank order).  A bucket where they are not is all-reduced instead. */
static size_t overlap_len(size_t a0, size_t n, size_t b0, size_t b1) {
    const size_t lo = a0 > b0 ? a0 : b0, hi = a0 + n < b1 ? a0 + n : b1;
    return hi > lo ? hi - lo : 0;
}

static gpt2c_status plan_reduce_scatter(gpt2c_dist *d) {
    d->rs_counts_mem = calloc((size_t)d->nbuckets * (size_t)d->size, sizeof(int));
    if (!d->rs_counts_mem) return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: out of memory (reduce-scatter plan)");
    for (int b = 0; b < d->nbuckets; b++) {
        gpt2c_dist_bucket *bk = &d->buckets[b];
        if (bk->gather) continue;
        int increasing = 1;
        for (int s = bk->first + 1; s < bk->first + bk->count; s++)
            increasing &= d->slices[s].off >= d->slices[s - 1].off + d->slices[s - 1].n;
        if (!increasing) continue;
        bk->rs = 1;
        bk->rs_counts = d->rs_counts_mem + (size_t)b * (size_t)d->size;
        size_t before = 0; /* elements of ranks < this one */
        for (int r = 0; r < d->size; r++) {
            const size_t lo = (size_t)d->displs[r], hi = lo + (size_t)d->counts[r];
            size_t c = 0;
            for (int s = bk->first; s < bk->first + bk->count; s++) c += overlap_len(d->slices[s].off, d->slices[s].n, lo, hi);
            bk->rs_counts[r] = (int)c;
            if (r < d->rank) before += c;
        }
        bk->rs_first = before;
    }
    return GPT2C_OK;
}

/* After a reduce-scatter: this rank's summed elements, at the start of the
 * bucket's buffer, to their places in the slab. */
static void rs_unpack(gpt2c_dist *d, const gpt2c_dist_bucket *bk, float *g) {
    size_t skip = bk->rs_first, left = (size_t)bk->rs_counts[d->rank];
    if (!bk->packed) { /* one slice, reduced in the slab itself: move the part up (overlapping) */
        float *base = g + d->slices[bk->first].off;
        memmove(base + skip, base, left * sizeof(float));
        return;
    }
    const float *src = bk->pack;
    for (int s = bk->first; s < bk->first + bk->count && left; s++) {
        const gpt2c_dist_slice *sl = &d->slices[s];
        if (skip >= sl->n) {
            skip -= sl->n;
            continue;
        }
        const size_t n = sl->n - skip < left ? sl->n - skip : left;
        memcpy(g + sl->off + skip, src, n * sizeof(float));
        src += n;
        left -= n;
        skip = 0;
    }
}

/* Bytes of group `group`'s buckets (-1 with all: every bucket): a profiler scope's bytes. */
static double bytes_ready(const gpt2c_dist *d, int group) {
    double n = 0;
    for (int b = 0; b < d->nbuckets; b++)
        if (d->buckets[b].group == group || (group == -1 && d->opts.overlap == 0)) n += (double)d->buckets[b].n;
    return n * sizeof(float);
}

/* The encoder's rows and tokens of every rank, in rank order. */
static gpt2c_status post_gather(gpt2c_dist *d, int b) {
    const gpt2c_model *m = d->m;
    const size_t N = (size_t)m->B * (size_t)m->T, C = (size_t)m->cfg.channels;
    if (N > d->rows_n)
        return gpt2c_fail(GPT2C_ERR_ARG, "mpi: a batch of %zu positions is more than the %zu planned", N, d->rows_n);
    if (d->buckets[b].gather == 1) {
        GPT2C_DIST_MPI(MPI_Iallgather(m->acts->dres, (int)(N * C), MPI_FLOAT, d->rows_all, (int)(N * C), MPI_FLOAT, d->comm,
                                      &d->reqs[b]));
        d->stats.bytes += (double)N * C * sizeof(float);
    } else {
        GPT2C_DIST_MPI(MPI_Iallgather(m->acts->tokens, (int)N, MPI_INT32_T, d->tokens_all, (int)N, MPI_INT32_T, d->comm,
                                      &d->reqs[b]));
    }
    return GPT2C_OK;
}

/* wte's rows apart (after the gather): every rank's encoder rows added to wte's
 * reduced gradient, rank 0's first, as one process with the global batch would */
static void add_rows(gpt2c_dist *d, gpt2c_model *m) {
    const gpt2c_param_info *pi = &m->info[GPT2C_P_WTE];
    float *dwte = m->grads_mem + pi->byte_offset / sizeof(float);
    GPT2C_PROF_OP(m->prof, GPT2C_OP_ENCODER, -1, 0, 0,
                  m->k->encoder_backward(dwte, NULL, d->rows_all, d->tokens_all, d->size * m->B, m->T, m->cfg.channels));
}

static gpt2c_status post_bucket(gpt2c_dist *d, int b) {
    gpt2c_dist_bucket *bk = &d->buckets[b];
    if (bk->gather) return post_gather(d, b);
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
    if (bk->rs) /* in place: this rank's sums land at the buffer's start (rs_unpack moves them) */
        GPT2C_DIST_MPI(MPI_Ireduce_scatter(MPI_IN_PLACE, buf, bk->rs_counts, MPI_FLOAT, MPI_SUM, d->comm, &d->reqs[b]));
    else
        GPT2C_DIST_MPI(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)bk->n, MPI_FLOAT, MPI_SUM, d->comm, &d->reqs[b]));
    d->stats.bytes += (double)bk->n * sizeof(float);
    return GPT2C_OK;
}

/* ---- overlap: the communication thread -----------------------------------
 * Backward's hook only records which groups are final and wakes the thread;
 * the thread posts their buckets in plan order and keeps calling MPI_Testall
 * (Open MPI moves a nonblocking collective forward only inside MPI calls),
 * yielding the core between calls.  reduce() hands everything left to it
 * and waits until all buckets are complete; only then does the main thread
 * call MPI again. */
static int load_ready(gpt2c_dist *d) { return __atomic_load_n(&d->ready, __ATOMIC_ACQUIRE); }

static int can_post(gpt2c_dist *d) {
    return d->active && d->posted < d->nbuckets && d->buckets[d->posted].group >= load_ready(d);
}

static void *comm_thread(void *arg) {
    gpt2c_dist *d = arg;
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->quit && !can_post(d)) pthread_cond_wait(&d->cv, &d->mu);
        if (d->quit) break;
        const int ready = load_ready(d);
        pthread_mutex_unlock(&d->mu);
        gpt2c_status st = GPT2C_OK;
        if (!d->t_first_post) d->t_first_post = gpt2c_now_ns();
        while (st == GPT2C_OK && d->posted < d->nbuckets && d->buckets[d->posted].group >= ready) {
            st = post_bucket(d, d->posted);
            d->posted++;
        }
        int done = 0;
        while (st == GPT2C_OK) { /* progress until all posted are done or more gradients are final */
            int err = MPI_Testall(d->posted, d->reqs, &done, MPI_STATUSES_IGNORE);
            if (err != MPI_SUCCESS) st = gpt2c_dist_mpi_fail(err, "MPI_Testall(gradient buckets)");
            if (done || load_ready(d) < ready) break;
            sched_yield();
        }
        pthread_mutex_lock(&d->mu);
        if (st != GPT2C_OK) {
            d->thread_status = st;
            snprintf(d->thread_msg, sizeof d->thread_msg, "%s", gpt2c_errmsg());
        }
        if (st != GPT2C_OK || (done && d->posted == d->nbuckets)) {
            d->stats.comm_ms += (gpt2c_now_ns() - d->t_first_post) / 1e6;
            d->active = 0;
            d->finished = 1;
            pthread_cond_broadcast(&d->cv);
        }
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

static gpt2c_status start_thread(gpt2c_dist *d) {
    if (d->thread_level < MPI_THREAD_SERIALIZED) { /* this MPI cannot: reduce after backward */
        d->opts.overlap = 0;
        return GPT2C_OK;
    }
    if (pthread_mutex_init(&d->mu, NULL) != 0) return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: cannot create a mutex");
    if (pthread_cond_init(&d->cv, NULL) != 0) {
        pthread_mutex_destroy(&d->mu);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: cannot create a condition variable");
    }
    if (pthread_create(&d->thread, NULL, comm_thread, d) != 0) {
        pthread_cond_destroy(&d->cv);
        pthread_mutex_destroy(&d->mu);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: cannot start the communication thread");
    }
    d->have_thread = 1;
    return GPT2C_OK;
}

void gpt2c_dist_stop_thread(gpt2c_dist *d) {
    if (!d->have_thread) return;
    pthread_mutex_lock(&d->mu);
    d->quit = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    d->have_thread = 0;
}

static void mark_ready(gpt2c_dist *d, int group) {
    pthread_mutex_lock(&d->mu);
    __atomic_store_n(&d->ready, group, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

/* on_grads_final: groups L, L-1, ..., 0, -1 in turn */
/* NCCL: this group's buckets enqueued now (the first failure is kept for reduce()) */
static void post_device(gpt2c_dist *d, int layer) {
#ifdef GPT2C_HAVE_NCCL
    int to = d->posted;
    while (to < d->nbuckets && d->buckets[to].group >= layer) to++;
    const gpt2c_status st = d->nccl_status == GPT2C_OK ? gpt2c_dist_nccl_post(d, d->posted, to) : d->nccl_status;
    d->nccl_status = st;
    d->posted = to;
#else
    (void)d, (void)layer;
#endif
}

static void on_grads_final(void *ctx, int layer) {
    gpt2c_dist *d = ctx;
    if (d->nccl)
        GPT2C_PROF_OP(d->m->prof, GPT2C_OP_ALLREDUCE, layer, 0, bytes_ready(d, layer), post_device(d, layer));
    else
        GPT2C_PROF_OP(d->m->prof, GPT2C_OP_ALLREDUCE, layer, 0, bytes_ready(d, layer), mark_ready(d, layer));
}

static void arm(void *ctx, gpt2c_model *m) {
    gpt2c_dist *d = ctx;
    m->wte_rows_apart = d->wte_early; /* overlapped or not: the same collectives */
    if (d->nccl) {
        d->posted = 0;
        d->nccl_status = GPT2C_OK;
        if (!d->opts.overlap) return;
        m->on_grads_final = on_grads_final;
        m->grads_final_ctx = d;
        d->armed = 1;
        return;
    }
    if (!d->have_thread) return;
    pthread_mutex_lock(&d->mu);
    d->posted = 0;
    __atomic_store_n(&d->ready, m->cfg.num_layers + 2, __ATOMIC_RELEASE);
    d->active = 1;
    d->finished = 0;
    d->t_first_post = 0;
    d->thread_status = GPT2C_OK;
    pthread_mutex_unlock(&d->mu);
    m->on_grads_final = on_grads_final;
    m->grads_final_ctx = d;
    d->armed = 1;
}

/* Without the thread: post every bucket, in the same order, and wait. */
static gpt2c_status reduce_now(gpt2c_dist *d) {
    /* a barrier first: the time ranks wait for the slowest (skew) is then
     * not counted as the all-reduce's (GPT2C_DIST_STATS) */
    const uint64_t t0 = gpt2c_now_ns();
    GPT2C_DIST_MPI(MPI_Barrier(d->comm));
    d->stats.skew_ms += (gpt2c_now_ns() - t0) / 1e6;
    d->posted = 0;
    for (int b = 0; b < d->nbuckets; b++) {
        GPT2C_TRY(post_bucket(d, b));
        d->posted++;
    }
    GPT2C_DIST_MPI(MPI_Waitall(d->nbuckets, d->reqs, MPI_STATUSES_IGNORE));
    return GPT2C_OK;
}

/* With the thread: everything is final now; wait for the last bucket. */
static gpt2c_status reduce_wait(gpt2c_dist *d) {
    mark_ready(d, -1);
    pthread_mutex_lock(&d->mu);
    while (!d->finished) pthread_cond_wait(&d->cv, &d->mu);
    const gpt2c_status st = d->thread_status;
    pthread_mutex_unlock(&d->mu);
    if (st != GPT2C_OK) return gpt2c_fail(st, "%s", d->thread_msg);
    return GPT2C_OK;
}

static gpt2c_status reduce_device(gpt2c_dist *d) {
#ifdef GPT2C_HAVE_NCCL
    post_device(d, -1);
    GPT2C_TRY(d->nccl_status);
    return gpt2c_dist_nccl_wait(d);
#else
    (void)d;
    return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "nccl: not built");
#endif
}

static gpt2c_status reduce(void *ctx, gpt2c_model *m, double *loss) {
    gpt2c_dist *d = ctx;
    const int threaded = d->armed && !d->nccl; /* the communication thread has posted */
    const int rows_apart = m->wte_rows_apart;
    m->wte_rows_apart = 0;
    if (d->wte_early && !rows_apart)
        return gpt2c_fail(GPT2C_ERR_ARG, "mpi: the gradients were computed without the reduction armed");
    if (d->armed) {
        m->on_grads_final = NULL;
        m->grads_final_ctx = NULL;
        d->armed = 0;
    }
    if (d->fail_rank == d->rank && d->fail_step == d->stats.steps) {
        if (threaded) (void)reduce_wait(d); /* leave no thread inside MPI */
        return gpt2c_fail(GPT2C_ERR_IO, "injected failure at step %d (GPT2C_DIST_FAIL)", d->stats.steps);
    }
    const uint64_t t0 = gpt2c_now_ns();
    const double skew0 = d->stats.skew_ms;
    gpt2c_status st = GPT2C_OK;
    if (d->nccl) /* the rest enqueued; the compute stream waits for them (the host does not) */
        GPT2C_PROF_OP(m->prof, GPT2C_OP_ALLREDUCE, -1, 0, threaded ? 0 : bytes_ready(d, -1), st = reduce_device(d));
    else
        GPT2C_PROF_OP(m->prof, GPT2C_OP_ALLREDUCE, -1, 0, threaded ? 0 : bytes_ready(d, -1),
                      st = threaded ? reduce_wait(d) : reduce_now(d));
    const double waited = (gpt2c_now_ns() - t0) / 1e6;
    d->stats.wait_ms += waited;
    if (!threaded && !d->nccl) d->stats.comm_ms += waited - (d->stats.skew_ms - skew0);
    GPT2C_TRY(st);
    for (int b = 0; b < d->nbuckets && !d->nccl; b++) { /* unpack (NCCL reduces in place, unpacked) */
        const gpt2c_dist_bucket *bk = &d->buckets[b];
        if (bk->rs) {
            rs_unpack(d, bk, m->grads_mem);
            continue;
        }
        if (!bk->packed) continue;
        size_t at = 0;
        for (int s = bk->first; s < bk->first + bk->count; s++) {
            memcpy(m->grads_mem + d->slices[s].off, bk->pack + at, d->slices[s].n * sizeof(float));
            at += d->slices[s].n;
        }
    }
    if (rows_apart) add_rows(d, m);
    double sum = 0;
    GPT2C_DIST_MPI(MPI_Allreduce(loss, &sum, 1, MPI_DOUBLE, MPI_SUM, d->comm));
    *loss = sum / d->size;
    d->stats.steps++;
    return GPT2C_OK;
}

static gpt2c_status mean(void *ctx, double *v) {
    gpt2c_dist *d = ctx;
    double sum = 0;
    GPT2C_DIST_MPI(MPI_Allreduce(v, &sum, 1, MPI_DOUBLE, MPI_SUM, d->comm));
    *v = sum / d->size;
    return GPT2C_OK;
}

gpt2c_status gpt2c_dist_attach(gpt2c_dist *d, gpt2c_model *m, const gpt2c_dist_opts *o, gpt2c_train_dp *dp) {
    const int device = m->params_host != NULL;
#ifdef GPT2C_HAVE_NCCL
    if (device && o->zero)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                          "ZeRO stage %d on backend %s: not built (its shard and parameter all-gather are host code); "
                          "use stage 0 (NCCL all-reduce on the device)", o->zero, m->k->name);
#else
    if (device)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                          "backend %s: data parallel on a device needs NCCL, not found when this was built; use ref, "
                          "cpu or blas", m->k->name);
#endif
    if (o->zero < 0 || o->zero > 1) return gpt2c_fail(GPT2C_ERR_ARG, "ZeRO stage %d: expected 0 (plain data parallel) or 1", o->zero);
    if (m->slab_floats > (size_t)INT32_MAX)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "mpi: %zu parameters is more than MPI's int counts", m->slab_floats);
    d->m = m;
    d->opts = *o;
    if (d->opts.bucket_floats == 0) d->opts.bucket_floats = gpt2c_dist_opts_default().bucket_floats;
    GPT2C_TRY(gpt2c_model_alloc_grads(m));
    /* wte's LM-head part early when the ranks' rows are fewer than wte's (GPT2C_DIST_WTE_EARLY=0: off) */
    const char *we = getenv("GPT2C_DIST_WTE_EARLY");
    const size_t N = (size_t)m->B * (size_t)m->T, C = (size_t)m->cfg.channels;
    d->wte_early = m->trainable[GPT2C_P_WTE] && m->acts && N > 0 && (size_t)d->size * N <= (size_t)m->cfg.padded_vocab_size &&
                   (size_t)d->size * N * C <= (size_t)INT32_MAX && !(we && strcmp(we, "0") == 0);
    if (d->wte_early) {
        d->rows_n = N;
        /* in the backend's memory: the device's for NCCL */
        d->rows_all = gpt2c_mem_alloc(m->k, (size_t)d->size * N * C * sizeof(float), "encoder rows of every rank");
        d->tokens_all = gpt2c_mem_alloc(m->k, (size_t)d->size * N * sizeof(int32_t), "tokens of every rank");
        if (!d->rows_all || !d->tokens_all) return GPT2C_ERR_NOMEM;
    }
    d->stats.wte_early = d->wte_early;
    d->stats.device = device;
    GPT2C_TRY(plan(d, m));
    if (o->zero) {
        GPT2C_TRY(gpt2c_dist_zero_attach(d, m));
        const char *ar = getenv("GPT2C_DIST_ZERO_ALLREDUCE"); /* bench/mpi.sh: the all-reduce, for comparison */
        d->rs = !(ar && strcmp(ar, "1") == 0);
        if (d->rs) GPT2C_TRY(plan_reduce_scatter(d));
        d->stats.reduce_scatter = d->rs;
    }
#ifdef GPT2C_HAVE_NCCL
    if (device) GPT2C_TRY(gpt2c_dist_nccl_attach(d)); /* no thread: NCCL runs on a stream of its own */
#endif
    if (d->opts.overlap && !d->nccl) GPT2C_TRY(start_thread(d));
    *dp = (gpt2c_train_dp){.rank = d->rank, .nranks = d->size, .ctx = d, .arm = arm, .reduce = reduce,
                           .update = o->zero ? gpt2c_dist_zero_update : NULL, .mean = mean};
    return GPT2C_OK;
}

gpt2c_dist_stats gpt2c_dist_get_stats(const gpt2c_dist *d) { return d->stats; }
