/* Magnitude pruning (gpt2c/prune.h).
 *
 * The k smallest |w| are found by a two-pass radix select on the bits of |w|:
 * for non-negative IEEE floats the unsigned bit pattern orders as the value,
 * so a histogram of the top 16 bits, then of the low 16 bits inside the
 * bucket that holds the k-th key, gives the threshold in O(n) with no sort.
 * Everything below the threshold is zeroed, and just enough of the weights
 * equal to it (lowest index first) to make exactly k. */
#include "gpt2c/prune.h"

#include "gpt2c/lora.h"
#include "model/model_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const int k_targets[] = {GPT2C_P_QKVW, GPT2C_P_ATTPROJW, GPT2C_P_FCW, GPT2C_P_FCPROJW};
#define NTARGETS 4

int gpt2c_prune_is_target(int id) {
    for (int i = 0; i < NTARGETS; i++)
        if (k_targets[i] == id) return 1;
    return 0;
}

static uint32_t abs_key(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u & 0x7fffffffu;
}

typedef struct {
    float *w;
    size_t n;
} segment;

/* Zeros the k smallest |w| over the segments (in order: ties go lowest index first). */
static gpt2c_status prune_k_smallest(const segment *s, int ns, size_t k) {
    if (k == 0) return GPT2C_OK;
    size_t *h = calloc(65536, sizeof *h);
    if (!h) return gpt2c_fail(GPT2C_ERR_NOMEM, "prune: out of memory (histogram)");
    for (int j = 0; j < ns; j++)
        for (size_t i = 0; i < s[j].n; i++) h[abs_key(s[j].w[i]) >> 16]++;
    size_t below = 0;
    uint32_t hi = 0;
    while (below + h[hi] < k) below += h[hi++];
    memset(h, 0, 65536 * sizeof *h);
    for (int j = 0; j < ns; j++)
        for (size_t i = 0; i < s[j].n; i++) {
            const uint32_t key = abs_key(s[j].w[i]);
            if (key >> 16 == hi) h[key & 0xffffu]++;
        }
    uint32_t lo = 0;
    while (below + h[lo] < k) below += h[lo++];
    free(h);
    const uint32_t thr = hi << 16 | lo;
    size_t equal_left = k - below; /* weights with |w| == threshold still to prune */
    for (int j = 0; j < ns; j++)
        for (size_t i = 0; i < s[j].n; i++) {
            const uint32_t key = abs_key(s[j].w[i]);
            if (key < thr) s[j].w[i] = 0.0f;
            else if (key == thr && equal_left) s[j].w[i] = 0.0f, equal_left--;
        }
    return GPT2C_OK;
}

/* Python's round(): half to even (the default rounding mode of nearbyint). */
static size_t count_to_prune(double sparsity, size_t n) { return (size_t)nearbyint(sparsity * (double)n); }

/* 2:4 along the input dimension: rows are (out, in), so a group is 4
 * consecutive weights of a row; its two smallest |w| (stable) are zeroed. */
static void prune_2_4(float *w, size_t n) {
    for (size_t g = 0; g + 4 <= n; g += 4) {
        int idx[4] = {0, 1, 2, 3};
        for (int a = 1; a < 4; a++) /* stable insertion sort by |w| */
            for (int b = a; b > 0 && abs_key(w[g + idx[b]]) < abs_key(w[g + idx[b - 1]]); b--) {
                const int t = idx[b];
                idx[b] = idx[b - 1];
                idx[b - 1] = t;
            }
        w[g + idx[0]] = 0.0f;
        w[g + idx[1]] = 0.0f;
    }
}

/* The pattern / scope over the gathered segments (total: their elements). */
static gpt2c_status prune_segments(const segment *seg, int ns, size_t total, double sparsity, gpt2c_prune_scope scope,
                                   gpt2c_prune_pattern pattern) {
    gpt2c_status st = GPT2C_OK;
    if (pattern == GPT2C_PRUNE_2_4) {
        for (int j = 0; j < ns; j++) prune_2_4(seg[j].w, seg[j].n);
    } else if (scope == GPT2C_PRUNE_GLOBAL) {
        st = prune_k_smallest(seg, ns, count_to_prune(sparsity, total));
    } else {
        for (int j = 0; j < ns && st == GPT2C_OK; j++) st = prune_k_smallest(&seg[j], 1, count_to_prune(sparsity, seg[j].n));
    }
    return st;
}

static size_t zeros_in(const float *w, size_t n) {
    size_t z = 0;
    for (size_t i = 0; i < n; i++) z += w[i] == 0.0f;
    return z;
}

gpt2c_status gpt2c_prune_count_zeros(const gpt2c_model *m, int id, int layer, size_t *zeros, size_t *numel) {
    float *h;
    GPT2C_TRY(gpt2c_model_params_host(m, &h));
    size_t z = 0, n = 0;
    for (int t = 0; t < NTARGETS; t++) {
        if (id >= 0 && k_targets[t] != id) continue;
        const gpt2c_param_info *pi = &m->info[k_targets[t]];
        const size_t per = (size_t)pi->rows * (size_t)pi->cols;
        for (int l = 0; l < m->cfg.num_layers; l++) {
            if (id >= 0 && layer >= 0 && l != layer) continue;
            z += zeros_in(gpt2c_param_slice(m, h, k_targets[t], l), per);
            n += per;
        }
    }
    if (zeros) *zeros = z;
    if (numel) *numel = n;
    return GPT2C_OK;
}

gpt2c_status gpt2c_prune_model(gpt2c_model *m, double sparsity, gpt2c_prune_scope scope, gpt2c_prune_pattern pattern,
                               size_t *zeros) {
    if (!(sparsity >= 0.0 && sparsity < 1.0))
        return gpt2c_fail(GPT2C_ERR_ARG, "prune: sparsity %g is outside [0, 1)", sparsity);
    if (scope != GPT2C_PRUNE_GLOBAL && scope != GPT2C_PRUNE_LAYER)
        return gpt2c_fail(GPT2C_ERR_ARG, "prune: unknown scope %d", (int)scope);
    if (pattern != GPT2C_PRUNE_UNSTRUCTURED && pattern != GPT2C_PRUNE_2_4)
        return gpt2c_fail(GPT2C_ERR_ARG, "prune: unknown pattern %d", (int)pattern);
    if (pattern == GPT2C_PRUNE_2_4 && sparsity != 0.5)
        return gpt2c_fail(GPT2C_ERR_ARG, "prune: the 2:4 pattern prunes exactly 0.5 (got sparsity %g)", sparsity);
    if (m->qw)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "prune: the model is quantized: prune its fp32 checkpoint, then quantize");
    const int L = m->cfg.num_layers;
    if (pattern == GPT2C_PRUNE_2_4)
        for (int t = 0; t < NTARGETS; t++)
            if (m->info[k_targets[t]].cols % 4)
                return gpt2c_fail(GPT2C_ERR_ARG, "prune: 2:4 needs an input dimension divisible by 4 (%s has %d)",
                                  m->info[k_targets[t]].name, m->info[k_targets[t]].cols);
    float *h;
    GPT2C_TRY(gpt2c_model_params_host(m, &h));
    segment *seg = malloc(sizeof *seg * (size_t)NTARGETS * (size_t)L);
    if (!seg) return gpt2c_fail(GPT2C_ERR_NOMEM, "prune: out of memory");
    int ns = 0;
    size_t total = 0;
    for (int t = 0; t < NTARGETS; t++)
        for (int l = 0; l < L; l++) {
            const gpt2c_param_info *pi = &m->info[k_targets[t]];
            seg[ns] = (segment){gpt2c_param_slice(m, h, k_targets[t], l), (size_t)pi->rows * (size_t)pi->cols};
            total += seg[ns++].n;
        }
    const gpt2c_status st = prune_segments(seg, ns, total, sparsity, scope, pattern);
    free(seg);
    GPT2C_TRY(st);
    GPT2C_TRY(gpt2c_model_params_upload(m));
    if (zeros) GPT2C_TRY(gpt2c_prune_count_zeros(m, -1, -1, zeros, NULL));
    return GPT2C_OK;
}

gpt2c_status gpt2c_prune_lora(gpt2c_model *m, double sparsity, gpt2c_prune_scope scope, gpt2c_prune_pattern pattern,
                              size_t *zeros, size_t *numel) {
    gpt2c_lora *l = gpt2c_model_lora(m);
    if (!l) return gpt2c_fail(GPT2C_ERR_ARG, "prune: --target lora needs adapters (the model has none)");
    if (!(sparsity >= 0.0 && sparsity < 1.0))
        return gpt2c_fail(GPT2C_ERR_ARG, "prune: sparsity %g is outside [0, 1)", sparsity);
    if (pattern == GPT2C_PRUNE_2_4 && sparsity != 0.5)
        return gpt2c_fail(GPT2C_ERR_ARG, "prune: the 2:4 pattern prunes exactly 0.5 (got sparsity %g)", sparsity);
    const gpt2c_lora_cfg *c = gpt2c_lora_config(l);
    if (pattern == GPT2C_PRUNE_2_4 && c->rank % 4)
        return gpt2c_fail(GPT2C_ERR_ARG, "prune: 2:4 on LoRA B (out, r) needs a rank divisible by 4 (r = %d)", c->rank);
    const int L = m->cfg.num_layers;
    segment *seg = malloc(sizeof *seg * (size_t)GPT2C_LORA_NUM_SITES * 2 * (size_t)L);
    if (!seg) return gpt2c_fail(GPT2C_ERR_NOMEM, "prune: out of memory");
    int ns = 0;
    size_t total = 0;
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++) /* in the adapter slab's order: A of every layer, then B */
        for (int ab = 0; ab < 2; ab++)
            for (int layer = 0; layer < L && (c->targets >> s & 1); layer++) {
                const size_t n = (size_t)c->rank * (ab ? gpt2c_lora_site_out(l, s) : gpt2c_lora_site_in(l, s));
                seg[ns] = (segment){ab ? gpt2c_lora_B(l, s, layer, 0) : gpt2c_lora_A(l, s, layer, 0), n};
                total += seg[ns++].n;
            }
    const gpt2c_status st = prune_segments(seg, ns, total, sparsity, scope, pattern);
    size_t z = 0;
    for (int j = 0; j < ns; j++) z += zeros_in(seg[j].w, seg[j].n);
    free(seg);
    if (zeros) *zeros = z;
    if (numel) *numel = total;
    return st;
}

/* One bit per float of the parameter slab; only target weights are ever set. */
struct gpt2c_sparsity_mask {
    size_t nfloats, count;
    uint64_t *bits;
};

gpt2c_status gpt2c_sparsity_mask_from_zeros(const gpt2c_model *m, gpt2c_sparsity_mask **out) {
    *out = NULL;
    if (m->qw) return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "sparsity mask: the model is quantized (its weights are frozen)");
    float *h;
    GPT2C_TRY(gpt2c_model_params_host(m, &h));
    gpt2c_sparsity_mask *mk = calloc(1, sizeof *mk);
    if (!mk) return gpt2c_fail(GPT2C_ERR_NOMEM, "sparsity mask: out of memory");
    mk->nfloats = m->slab_floats;
    mk->bits = calloc((mk->nfloats + 63) / 64, sizeof *mk->bits);
    if (!mk->bits) {
        free(mk);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "sparsity mask: out of memory (mask of %zu bits)", m->slab_floats);
    }
    for (int t = 0; t < NTARGETS; t++) {
        const gpt2c_param_info *pi = &m->info[k_targets[t]];
        const size_t start = pi->byte_offset / sizeof(float);
        for (size_t i = start; i < start + pi->numel; i++)
            if (h[i] == 0.0f) mk->bits[i >> 6] |= 1ull << (i & 63), mk->count++;
    }
    if (mk->count == 0) {
        gpt2c_sparsity_mask_free(mk);
        return gpt2c_fail(GPT2C_ERR_ARG, "sparsity mask: the model's linear weights hold no zeros (prune it first: "
                                         "gpt2c prune)");
    }
    *out = mk;
    return GPT2C_OK;
}

size_t gpt2c_sparsity_mask_count(const gpt2c_sparsity_mask *mk) { return mk ? mk->count : 0; }

gpt2c_status gpt2c_sparsity_mask_apply(gpt2c_model *m, const gpt2c_sparsity_mask *mk) {
    if (mk->nfloats != m->slab_floats)
        return gpt2c_fail(GPT2C_ERR_ARG, "sparsity mask: made for a slab of %zu floats, the model has %zu", mk->nfloats,
                          m->slab_floats);
    float *h;
    GPT2C_TRY(gpt2c_model_params_host(m, &h));
    const size_t nwords = (mk->nfloats + 63) / 64;
    for (size_t wi = 0; wi < nwords; wi++) {
        uint64_t b = mk->bits[wi];
        while (b) {
            const int bit = __builtin_ctzll(b);
            h[wi * 64 + (size_t)bit] = 0.0f;
            b &= b - 1;
        }
    }
    return gpt2c_model_params_upload(m);
}

void gpt2c_sparsity_mask_free(gpt2c_sparsity_mask *mk) {
    if (!mk) return;
    free(mk->bits);
    free(mk);
}
