/* LoRA adapters (gpt2c/lora.h): storage, PEFT init, forward, backward, AdamW, merge.
 *
 * Storage: one slab per kind (parameters, gradients, AdamW m, AdamW v), laid
 * out site by site, and in each site A for every layer (L, r, in) then B for
 * every layer (L, out, r); so the optimizer and the norm see one flat array.
 *
 * Per site and layer the forward keeps t = scale * dropout(x) A^T (N, r) for
 * the backward (dB needs it); the dropout mask is not stored: it is a hash of
 * (seed, forward count, site, layer, element), recomputed by the backward
 * from the layer input x that the frozen model keeps anyway.
 *
 *   forward   t = scale * xd A^T          y += t B^T
 *   backward  g = dY B; dB += dY^T t      g *= scale
 *             dA += g^T xd;  dx += mask/(1-p) * (g A) */
#include "gpt2c/lora.h"
#include "model/model_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"
#include "model/acts.h"
#include "model/memspace.h"

static const char *const SITE_NAME[GPT2C_LORA_NUM_SITES] = {"c_attn", "attn.c_proj", "c_fc", "mlp.c_proj"};
static const int SITE_PARAM[GPT2C_LORA_NUM_SITES] = {GPT2C_P_QKVW, GPT2C_P_ATTPROJW, GPT2C_P_FCW, GPT2C_P_FCPROJW};

struct gpt2c_lora {
    gpt2c_lora_cfg cfg;
    float scale;
    int L;
    int in[GPT2C_LORA_NUM_SITES], out[GPT2C_LORA_NUM_SITES];
    size_t off[GPT2C_LORA_NUM_SITES]; /* floats from the slab start to the site's A block; B follows L*r*in later */
    size_t floats;                    /* of each slab */
    float *slab[4];                   /* params, grads, m, v */
    int opt_step;
    int training;
    uint64_t dropout_seed, dropout_calls;
    /* activations, planned for N rows */
    size_t N;
    float *t;       /* (sites, L, N, r) */
    float *xd, *dx; /* (N, max in) dropped input, adapter's input gradient */
    float *u;       /* (N, max out) t B^T */
    float *g;       /* (N, r) */
    size_t act_bytes;
};

const char *gpt2c_lora_site_name(int site) {
    return site >= 0 && site < GPT2C_LORA_NUM_SITES ? SITE_NAME[site] : "?";
}
int gpt2c_lora_site_param(int site) { return SITE_PARAM[site]; }
int gpt2c_lora_site_of_param(int id) {
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++)
        if (SITE_PARAM[s] == id) return s;
    return -1;
}

gpt2c_status gpt2c_lora_parse_targets(const char *list, unsigned *targets) {
    *targets = 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        int found = 0;
        if (n == 3 && strncmp(p, "all", 3) == 0) {
            *targets |= (1u << GPT2C_LORA_NUM_SITES) - 1;
            found = 1;
        } else if (n == 6 && strncmp(p, "c_proj", 6) == 0) { /* PEFT's suffix match: both projections */
            *targets |= 1u << GPT2C_LORA_ATTN_C_PROJ | 1u << GPT2C_LORA_MLP_C_PROJ;
            found = 1;
        }
        for (int s = 0; s < GPT2C_LORA_NUM_SITES && !found; s++) {
            const char *name = SITE_NAME[s];
            size_t k = strlen(name);
            /* also the long forms PEFT users write: "attn.c_attn", "mlp.c_fc" */
            int full = n == k && strncmp(p, name, k) == 0;
            int longer = (s == GPT2C_LORA_C_ATTN && n == 11 && strncmp(p, "attn.c_attn", 11) == 0) ||
                         (s == GPT2C_LORA_C_FC && n == 8 && strncmp(p, "mlp.c_fc", 8) == 0);
            if (full || longer) {
                *targets |= 1u << s;
                found = 1;
            }
        }
        if (!found)
            return gpt2c_fail(GPT2C_ERR_ARG,
                              "LoRA target module '%.*s' is not one of c_attn, attn.c_proj, c_fc, mlp.c_proj (or "
                              "c_proj, all)",
                              (int)n, p);
        p += n;
        if (*p == ',') p++;
    }
    if (!*targets) return gpt2c_fail(GPT2C_ERR_ARG, "LoRA target modules: the list is empty");
    return GPT2C_OK;
}

void gpt2c_lora_targets_str(unsigned targets, char *buf, size_t n) {
    size_t used = 0;
    buf[0] = 0;
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++)
        if (targets >> s & 1) used += (size_t)snprintf(buf + used, used < n ? n - used : 0, "%s%s", used ? "," : "", SITE_NAME[s]);
}

gpt2c_lora *gpt2c_model_lora(const gpt2c_model *m) { return m->lora; }
const gpt2c_lora_cfg *gpt2c_lora_config(const gpt2c_lora *l) { return &l->cfg; }
float gpt2c_lora_scale(const gpt2c_lora *l) { return l->scale; }
size_t gpt2c_lora_num_params(const gpt2c_lora *l) { return l->floats; }
int gpt2c_lora_site_in(const gpt2c_lora *l, int site) { return l->in[site]; }
int gpt2c_lora_site_out(const gpt2c_lora *l, int site) { return l->out[site]; }
int gpt2c_lora_opt_step(const gpt2c_lora *l) { return l->opt_step; }
void gpt2c_lora_set_opt_step(gpt2c_lora *l, int step) { l->opt_step = step; }
void gpt2c_lora_set_dropout_seed(gpt2c_lora *l, uint64_t seed, uint64_t forwards_done) {
    l->dropout_seed = seed;
    l->dropout_calls = forwards_done;
}
int gpt2c_lora_set_training(gpt2c_lora *l, int on) {
    int was = l->training;
    l->training = on != 0;
    return was;
}

float *gpt2c_lora_A(const gpt2c_lora *l, int site, int layer, int what) {
    if (!(l->cfg.targets >> site & 1)) return NULL;
    return l->slab[what] + l->off[site] + (size_t)layer * l->cfg.rank * l->in[site];
}
float *gpt2c_lora_B(const gpt2c_lora *l, int site, int layer, int what) {
    if (!(l->cfg.targets >> site & 1)) return NULL;
    const size_t r = (size_t)l->cfg.rank;
    return l->slab[what] + l->off[site] + (size_t)l->L * r * l->in[site] + (size_t)layer * l->out[site] * r;
}

gpt2c_lora_bytes gpt2c_lora_memory(const gpt2c_lora *l) {
    gpt2c_lora_bytes b = {l->floats * sizeof(float), l->floats * sizeof(float), 2 * l->floats * sizeof(float),
                          l->act_bytes};
    return b;
}

static void lora_free(gpt2c_lora *l) {
    if (!l) return;
    for (int i = 0; i < 4; i++) gpt2c_free(l->slab[i]);
    gpt2c_free(l->t);
    gpt2c_free(l->xd);
    gpt2c_free(l->dx);
    gpt2c_free(l->u);
    gpt2c_free(l->g);
    free(l);
}

void gpt2c_lora_detach(gpt2c_model *m) {
    if (!m->lora) return;
    lora_free(m->lora);
    m->lora = NULL;
    gpt2c_acts_drop(m); /* the activation plan depends on the adapters */
}

gpt2c_status gpt2c_lora_attach(gpt2c_model *m, const gpt2c_lora_cfg *cfg, uint64_t seed) {
    if (m->lora) return gpt2c_fail(GPT2C_ERR_ARG, "LoRA: the model already has adapters");
    if (cfg->rank < 1) return gpt2c_fail(GPT2C_ERR_ARG, "LoRA rank %d: must be >= 1", cfg->rank);
    if (!(cfg->dropout >= 0 && cfg->dropout < 1))
        return gpt2c_fail(GPT2C_ERR_ARG, "LoRA dropout %g: must be in [0, 1)", (double)cfg->dropout);
    if (!isfinite(cfg->alpha)) return gpt2c_fail(GPT2C_ERR_ARG, "LoRA alpha %g: must be finite", (double)cfg->alpha);
    if (!cfg->targets || cfg->targets >> GPT2C_LORA_NUM_SITES)
        return gpt2c_fail(GPT2C_ERR_ARG, "LoRA: no (valid) target modules");
    if (gpt2c_mem_is_device(m->k))
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "LoRA: adapters run on host backends only (cpu, blas, ref), not %s",
                          "a device backend");
    gpt2c_lora *l = calloc(1, sizeof *l);
    if (!l) return gpt2c_fail(GPT2C_ERR_NOMEM, "LoRA: out of memory");
    l->cfg = *cfg;
    l->scale = cfg->alpha / (float)cfg->rank;
    l->L = m->cfg.num_layers;
    const size_t r = (size_t)cfg->rank;
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++) {
        const gpt2c_param_info *pi = &m->info[SITE_PARAM[s]];
        l->out[s] = pi->rows;
        l->in[s] = pi->cols;
        l->off[s] = l->floats;
        if (cfg->targets >> s & 1) l->floats += (size_t)l->L * r * (l->in[s] + l->out[s]);
    }
    static const char *const what[4] = {"LoRA parameters", "LoRA gradients", "LoRA AdamW m", "LoRA AdamW v"};
    for (int i = 0; i < 4; i++) {
        l->slab[i] = gpt2c_alloc(l->floats * sizeof(float), what[i]);
        if (!l->slab[i]) {
            lora_free(l);
            return GPT2C_ERR_NOMEM;
        }
        memset(l->slab[i], 0, l->floats * sizeof(float));
    }
    /* A: kaiming_uniform_(a = sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)); B: 0 (PEFT's init_lora_weights=True) */
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++) {
        if (!(cfg->targets >> s & 1)) continue;
        const float bound = 1.0f / sqrtf((float)l->in[s]);
        for (int layer = 0; layer < l->L; layer++) {
            gpt2c_rng rng;
            gpt2c_rng_seed(&rng, seed, 0x10AA0000u + (uint64_t)s * 4096 + (uint64_t)layer);
            float *A = gpt2c_lora_A(l, s, layer, 0);
            for (size_t i = 0; i < r * l->in[s]; i++) A[i] = bound * (2.0f * gpt2c_rng_uniform(&rng) - 1.0f);
        }
    }
    l->dropout_seed = seed;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        gpt2c_status st = gpt2c_model_set_trainable(m, id, 0);
        if (st != GPT2C_OK) {
            lora_free(l);
            return st;
        }
    }
    /* the frozen base needs no gradient slab and no moments (a loaded checkpoint may carry moments) */
    gpt2c_mem_free(m->k, m->grads_mem);
    gpt2c_mem_free(m->k, m->m_mem);
    gpt2c_mem_free(m->k, m->v_mem);
    m->grads_mem = m->m_mem = m->v_mem = NULL;
    memset(&m->grads, 0, sizeof m->grads);
    m->grads_zero = 1;
    m->grads_stale = 0;
    m->lora = l;
    gpt2c_acts_drop(m);
    return GPT2C_OK;
}

gpt2c_status gpt2c_lora_prepare(gpt2c_lora *l, const gpt2c_model *m, size_t N) {
    (void)m;
    if (l->t && l->N >= N) return GPT2C_OK;
    gpt2c_free(l->t);
    gpt2c_free(l->xd);
    gpt2c_free(l->dx);
    gpt2c_free(l->u);
    gpt2c_free(l->g);
    l->t = l->xd = l->dx = l->u = l->g = NULL;
    int nsites = 0, max_in = 0, max_out = 0;
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++)
        if (l->cfg.targets >> s & 1) {
            nsites++;
            if (l->in[s] > max_in) max_in = l->in[s];
            if (l->out[s] > max_out) max_out = l->out[s];
        }
    const size_t r = (size_t)l->cfg.rank;
    const size_t nt = (size_t)nsites * l->L * N * r;
    l->t = gpt2c_alloc(nt * sizeof(float), "LoRA activations");
    l->xd = l->cfg.dropout > 0 ? gpt2c_alloc(N * max_in * sizeof(float), "LoRA dropout input") : NULL;
    l->dx = gpt2c_alloc(N * max_in * sizeof(float), "LoRA input gradient");
    l->u = gpt2c_alloc(N * max_out * sizeof(float), "LoRA output");
    l->g = gpt2c_alloc(N * r * sizeof(float), "LoRA gradient scratch");
    if (!l->t || !l->dx || !l->u || !l->g || (l->cfg.dropout > 0 && !l->xd)) return GPT2C_ERR_NOMEM;
    l->N = N;
    l->act_bytes = (nt + N * max_in * (l->cfg.dropout > 0 ? 2 : 1) + N * max_out + N * r) * sizeof(float);
    return GPT2C_OK;
}

/* index of a site among the targeted ones (the t slab holds only those) */
static int site_slot(const gpt2c_lora *l, int site) {
    int k = 0;
    for (int s = 0; s < site; s++) k += l->cfg.targets >> s & 1;
    return k;
}

static float *site_t(const gpt2c_lora *l, int site, int layer) {
    return l->t + ((size_t)site_slot(l, site) * l->L + layer) * l->N * l->cfg.rank;
}

/* splitmix64 finaliser: the dropout mask of one element, as a uniform in [0, 1) */
static inline float mask_uniform(uint64_t key, uint64_t i) {
    uint64_t z = key + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

static uint64_t mask_key(const gpt2c_lora *l, int site, int layer) {
    return l->dropout_seed * 0xD1B54A32D192ED03ull ^ (l->dropout_calls * 0x8CB92BA72F3D8DD7ull) ^
           ((uint64_t)site << 56) ^ ((uint64_t)layer << 40);
}

static int dropping(const gpt2c_lora *l) { return l->training && l->cfg.dropout > 0; }

/* xd = x * keep / (1 - p) for the current mask */
static void apply_dropout(const gpt2c_lora *l, int site, int layer, float *xd, const float *x, size_t n) {
    const uint64_t key = mask_key(l, site, layer);
    const float p = l->cfg.dropout, keep_scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)n; i++) xd[i] = mask_uniform(key, (uint64_t)i) >= p ? x[i] * keep_scale : 0.0f;
}

void gpt2c_lora_forward(gpt2c_model *m, int site, int layer, float *out, const float *inp, int N) {
    gpt2c_lora *l = m->lora;
    if (!(l->cfg.targets >> site & 1)) return;
    const gpt2c_kernels *k = m->k;
    const int r = l->cfg.rank, IN = l->in[site], OUT = l->out[site];
    /* the first site of layer 0 starts a new training forward: new dropout masks */
    if (dropping(l) && layer == 0 && site_slot(l, site) == 0) l->dropout_calls++;
    const float *xd = inp;
    if (dropping(l)) {
        apply_dropout(l, site, layer, l->xd, inp, (size_t)N * IN);
        xd = l->xd;
    }
    float *t = site_t(l, site, layer);
    gpt2c_tensor A = gpt2c_tensor_f32(gpt2c_lora_A(l, site, layer, 0), r, IN);
    gpt2c_tensor B = gpt2c_tensor_f32(gpt2c_lora_B(l, site, layer, 0), OUT, r);
    k->matmul_forward(t, xd, &A, NULL, N, IN, r);
    const float scale = l->scale;
    for (size_t i = 0; i < (size_t)N * r; i++) t[i] *= scale;
    k->matmul_forward(l->u, t, &B, NULL, N, r, OUT);
    const float *u = l->u;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < (long)N * OUT; i++) out[i] += u[i];
}

void gpt2c_lora_backward(gpt2c_model *m, int site, int layer, float *dinp, const float *dout, const float *inp, int N) {
    gpt2c_lora *l = m->lora;
    if (!(l->cfg.targets >> site & 1)) return;
    const gpt2c_kernels *k = m->k;
    const int r = l->cfg.rank, IN = l->in[site], OUT = l->out[site];
    const float *t = site_t(l, site, layer);
    gpt2c_tensor A = gpt2c_tensor_f32(gpt2c_lora_A(l, site, layer, 0), r, IN);
    gpt2c_tensor B = gpt2c_tensor_f32(gpt2c_lora_B(l, site, layer, 0), OUT, r);
    /* g = dY B, dB += dY^T t */
    k->matmul_backward(l->g, gpt2c_lora_B(l, site, layer, 1), NULL, dout, t, &B, N, r, OUT, 1);
    for (size_t i = 0; i < (size_t)N * r; i++) l->g[i] *= l->scale;
    const float *xd = inp;
    const int drop = dropping(l);
    if (drop) {
        apply_dropout(l, site, layer, l->xd, inp, (size_t)N * IN);
        xd = l->xd;
    }
    /* dx = g A, dA += g^T xd */
    k->matmul_backward(l->dx, gpt2c_lora_A(l, site, layer, 1), NULL, l->g, xd, &A, N, IN, r, 1);
    const float *dx = l->dx;
    if (drop) {
        const uint64_t key = mask_key(l, site, layer);
        const float p = l->cfg.dropout, keep_scale = 1.0f / (1.0f - p);
#pragma omp parallel for schedule(static)
        for (long i = 0; i < (long)N * IN; i++)
            if (mask_uniform(key, (uint64_t)i) >= p) dinp[i] += dx[i] * keep_scale;
    } else {
#pragma omp parallel for schedule(static)
        for (long i = 0; i < (long)N * IN; i++) dinp[i] += dx[i];
    }
}

void gpt2c_lora_zero_grad(gpt2c_lora *l) { memset(l->slab[1], 0, l->floats * sizeof(float)); }

double gpt2c_lora_grad_sumsq(const gpt2c_lora *l) {
    double ss = 0;
    const float *g = l->slab[1];
    for (size_t i = 0; i < l->floats; i++) ss += (double)g[i] * g[i];
    return ss;
}

void gpt2c_lora_adamw(gpt2c_lora *l, const gpt2c_adamw_cfg *o, float lr, float grad_scale, int step) {
    /* every adapter tensor is a 2-D weight: decayed (torch.optim.AdamW over the trainable parameters) */
    gpt2c_ref_adamw(l->slab[0], l->slab[1], l->slab[2], l->slab[3], l->floats, lr, o->beta1, o->beta2, o->eps,
                    o->weight_decay, grad_scale, step);
    l->opt_step = step;
    gpt2c_lora_zero_grad(l);
}

gpt2c_status gpt2c_lora_merge(gpt2c_model *m) {
    gpt2c_lora *l = m->lora;
    if (!l) return gpt2c_fail(GPT2C_ERR_ARG, "merge: the model has no adapters");
    if (m->qw)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                          "merge: the base is quantized; merge into the fp32 base, then quantize the merged file");
    float *host;
    GPT2C_TRY(gpt2c_model_params_host(m, &host));
    const int r = l->cfg.rank;
    for (int s = 0; s < GPT2C_LORA_NUM_SITES; s++) {
        if (!(l->cfg.targets >> s & 1)) continue;
        const int IN = l->in[s], OUT = l->out[s];
        for (int layer = 0; layer < l->L; layer++) {
            float *W = gpt2c_param_slice(m, host, SITE_PARAM[s], layer);
            const float *A = gpt2c_lora_A(l, s, layer, 0), *B = gpt2c_lora_B(l, s, layer, 0);
            const float scale = l->scale;
            /* W (out, in) += scale * B (out, r) A (r, in), as PEFT's merge (transposed for Conv1D) */
#pragma omp parallel for schedule(static)
            for (int o = 0; o < OUT; o++) {
                float *w = W + (size_t)o * IN;
                for (int j = 0; j < r; j++) {
                    const float b = scale * B[(size_t)o * r + j];
                    const float *a = A + (size_t)j * IN;
                    for (int i = 0; i < IN; i++) w[i] += b * a[i];
                }
            }
        }
    }
    GPT2C_TRY(gpt2c_model_params_upload(m));
    gpt2c_lora_detach(m);
    return GPT2C_OK;
}
