/* ZeRO-1: each rank keeps the AdamW moments of one contiguous part of the
 * parameter slab, updates that part (gradients are already summed on every
 * rank) and all-gathers the parameters.  Also the checkpoint side: the
 * parameter check across ranks and gathering the moments on rank 0. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_internal.h"
#include "kernels/kernels.h"
#include "model/costs.h"
#include "model/memspace.h"
#include "model/model_internal.h"

/* rank r's part of n floats: equal parts of whole 64-byte lines */
void gpt2c_dist_part(size_t n, int size, int r, size_t *lo, size_t *hi) {
    size_t per = (n + (size_t)size - 1) / (size_t)size;
    per = (per + 15) & ~(size_t)15;
    *lo = (size_t)r * per < n ? (size_t)r * per : n;
    *hi = *lo + per < n ? *lo + per : n;
}

gpt2c_status gpt2c_dist_zero_attach(gpt2c_dist *d, gpt2c_model *m) {
    gpt2c_dist_part(m->slab_floats, d->size, d->rank, &d->lo, &d->hi);
    const size_t n = d->hi - d->lo;
    d->m_shard = calloc(n ? n : 1, sizeof(float));
    d->v_shard = calloc(n ? n : 1, sizeof(float));
    d->counts = malloc((size_t)d->size * sizeof(int));
    d->displs = malloc((size_t)d->size * sizeof(int));
    if (!d->m_shard || !d->v_shard || !d->counts || !d->displs)
        return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: out of memory (ZeRO-1 shard of %zu floats)", n);
    for (int r = 0; r < d->size; r++) {
        size_t lo, hi;
        gpt2c_dist_part(m->slab_floats, d->size, r, &lo, &hi);
        d->counts[r] = (int)(hi - lo);
        d->displs[r] = (int)lo;
    }
    if (m->m_mem) { /* resumed: keep this rank's part of the saved moments */
        memcpy(d->m_shard, m->m_mem + d->lo, n * sizeof(float));
        memcpy(d->v_shard, m->v_mem + d->lo, n * sizeof(float));
        gpt2c_mem_free(m->k, m->m_mem);
        gpt2c_mem_free(m->k, m->v_mem);
        m->m_mem = m->v_mem = NULL;
    }
    return GPT2C_OK;
}

void gpt2c_dist_zero_free(gpt2c_dist *d) {
    free(d->m_shard);
    free(d->v_shard);
    free(d->counts);
    free(d->displs);
    d->m_shard = d->v_shard = NULL;
    d->counts = d->displs = NULL;
}

#define OP(op, layer, cost, call) GPT2C_PROF_OP(m->prof, op, layer, (cost).flops, (cost).bytes, call)

/* The sum of squares of the trainable gradients in [lo, hi) of the slab. */
static double shard_sumsq(gpt2c_model *m, size_t lo, size_t hi) {
    double ss = 0;
    if (m->num_frozen == 0) { /* one pass, as gpt2c_model_update (the slab's padding is zero) */
        OP(GPT2C_OP_GRAD_NORM, -1, cost_sumsq((double)(hi - lo)), ss = m->k->sumsq(m->grads_mem + lo, hi - lo));
        return ss;
    }
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        if (!m->trainable[id]) continue;
        const size_t off = m->info[id].byte_offset / sizeof(float); /* fp32 slabs */
        const size_t a = off > lo ? off : lo, b = off + m->info[id].numel < hi ? off + m->info[id].numel : hi;
        if (a < b) OP(GPT2C_OP_GRAD_NORM, -1, cost_sumsq((double)(b - a)), ss += m->k->sumsq(m->grads_mem + a, b - a));
    }
    return ss;
}

/* gpt2c_model_update restricted to [lo, hi): the same global norm and clip,
 * the same element-wise AdamW.  After an all-reduce every rank has every
 * summed gradient and computes the norm alone; after a reduce-scatter it has
 * its shard's, and the ranks' sums of squares are added (in rank order, the
 * same on every rank). */
gpt2c_status gpt2c_dist_zero_update(void *ctx, gpt2c_model *m, const gpt2c_adamw_cfg *o, float lr, float *norm_out) {
    gpt2c_dist *d = ctx;
    const gpt2c_kernels *k = m->k;
    double ss = 0;
    if (d->rs) {
        const double mine = shard_sumsq(m, d->lo, d->hi);
        double *all = malloc((size_t)d->size * sizeof *all);
        if (!all) return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: out of memory");
        const int err = MPI_Allgather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, d->comm);
        for (int r = 0; r < d->size && err == MPI_SUCCESS; r++) ss += all[r];
        free(all);
        if (err != MPI_SUCCESS) return gpt2c_dist_mpi_fail(err, "MPI_Allgather(gradient norm)");
    } else {
        ss = shard_sumsq(m, 0, m->slab_floats);
    }
    const float norm = (float)sqrt(ss);
    if (norm_out) *norm_out = norm;
    if (!isfinite(norm)) return gpt2c_fail(GPT2C_ERR_RANGE, "update: gradient norm is %f (diverged)", norm);
    float scale = 1.0f;
    if (o->grad_clip > 0) {
        const float coef = o->grad_clip / (norm + 1e-6f);
        if (coef < 1.0f) scale = coef;
    }
    m->opt_step++;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        if (!m->trainable[id]) continue; /* frozen: no update, no decay */
        const gpt2c_param_info *pi = &m->info[id];
        const size_t off = pi->byte_offset / sizeof(float); /* fp32 slabs */
        const size_t a = off > d->lo ? off : d->lo;
        const size_t b = off + pi->numel < d->hi ? off + pi->numel : d->hi;
        if (a >= b) continue;
        const float wd = (pi->decay || o->decay_all) ? o->weight_decay : 0.0f;
        OP(GPT2C_OP_ADAMW, -1, cost_adamw((double)(b - a)),
           k->adamw(m->params_mem + a, m->grads_mem + a, d->m_shard + (a - d->lo), d->v_shard + (a - d->lo), b - a,
                    lr, o->beta1, o->beta2, o->eps, wd, scale, m->opt_step));
    }
    m->grads_zero = m->grads_stale = 0;
    gpt2c_model_zero_grad(m);
    const uint64_t t0 = gpt2c_now_ns();
    int err = MPI_SUCCESS;
    OP(GPT2C_OP_ALLGATHER, -1, ((op_cost){0, (double)m->slab_floats * sizeof(float)}),
       err = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, m->params_mem, d->counts, d->displs, MPI_FLOAT,
                            d->comm));
    d->stats.gather_ms += (gpt2c_now_ns() - t0) / 1e6;
    if (err != MPI_SUCCESS) return gpt2c_dist_mpi_fail(err, "MPI_Allgatherv(parameters)");
    return GPT2C_OK;
}

size_t gpt2c_dist_optimizer_bytes(const gpt2c_dist *d, const gpt2c_model *m) {
    if (d && d->m_shard) return 2 * (d->hi - d->lo) * sizeof(float);
    return 2 * m->slab_floats * sizeof(float);
}

/* 64-bit FNV-1a over 32-bit words: equal parameters, equal hash */
static uint64_t hash_floats(const float *x, size_t n) {
    uint64_t h = 1469598103934665603ull;
    const uint32_t *w = (const uint32_t *)(const void *)x;
    for (size_t i = 0; i < n; i++) h = (h ^ w[i]) * 1099511628211ull;
    return h;
}

gpt2c_status gpt2c_dist_before_save(gpt2c_dist *d, gpt2c_model *m) {
    float *params = NULL; /* on a device backend: its host mirror, brought up to date */
    GPT2C_TRY(gpt2c_model_params_host(m, &params));
    uint64_t h = hash_floats(params, m->slab_floats), h0 = h;
    GPT2C_DIST_MPI(MPI_Bcast(&h0, 1, MPI_UINT64_T, 0, d->comm));
    int bad = 0;
    const int nbad = gpt2c_dist_agree(d, h == h0, &bad);
    if (nbad)
        return gpt2c_fail(GPT2C_ERR_RANGE,
                          "mpi: the parameters of rank %d differ from rank 0's (%d of %d ranks diverged): not saving",
                          bad, nbad, d->size);
    if (!d->m_shard) return GPT2C_OK;
    float *full_m = NULL, *full_v = NULL;
    if (d->rank == 0) {
        full_m = gpt2c_mem_alloc(m->k, m->slab_floats * sizeof(float), "AdamW first moments (gathered)");
        full_v = gpt2c_mem_alloc(m->k, m->slab_floats * sizeof(float), "AdamW second moments (gathered)");
    }
    const int ok = d->rank != 0 || (full_m && full_v);
    if (gpt2c_dist_agree(d, ok, NULL)) {
        gpt2c_mem_free(m->k, full_m);
        gpt2c_mem_free(m->k, full_v);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "mpi: rank 0 cannot hold the gathered AdamW moments for the checkpoint");
    }
    const int n = (int)(d->hi - d->lo);
    int e1 = MPI_Gatherv(d->m_shard, n, MPI_FLOAT, full_m, d->counts, d->displs, MPI_FLOAT, 0, d->comm);
    int e2 = MPI_Gatherv(d->v_shard, n, MPI_FLOAT, full_v, d->counts, d->displs, MPI_FLOAT, 0, d->comm);
    if (e1 != MPI_SUCCESS || e2 != MPI_SUCCESS) {
        gpt2c_mem_free(m->k, full_m);
        gpt2c_mem_free(m->k, full_v);
        return gpt2c_dist_mpi_fail(e1 != MPI_SUCCESS ? e1 : e2, "MPI_Gatherv(AdamW moments)");
    }
    if (d->rank == 0) {
        m->m_mem = full_m;
        m->v_mem = full_v;
        d->moments_gathered = 1;
    }
    return GPT2C_OK;
}

void gpt2c_dist_after_save(gpt2c_dist *d, gpt2c_model *m) {
    if (!d->moments_gathered) return;
    gpt2c_mem_free(m->k, m->m_mem);
    gpt2c_mem_free(m->k, m->v_mem);
    m->m_mem = m->v_mem = NULL;
    d->moments_gathered = 0;
}
