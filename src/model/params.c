/* Parameter table: layout in the slab, Hugging Face names, GPT-2 init. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/lora.h"
#include "gpt2c/quant.h"
#include "gpt2c/quant_model.h"
#include "gpt2c/model.h"
#include "kernels/kernels.h"
#include "model/acts.h"
#include "model/memspace.h"
#include "model/model_internal.h"

typedef struct {
    const char *name, *hf_name;
    int per_layer, transposed, decay;
} param_desc;

static const param_desc DESC[GPT2C_NUM_PARAM_TENSORS] = {
    {"wte", "wte.weight", 0, 0, 1},
    {"wpe", "wpe.weight", 0, 0, 1},
    {"ln1w", "h.%d.ln_1.weight", 1, 0, 0},
    {"ln1b", "h.%d.ln_1.bias", 1, 0, 0},
    {"qkvw", "h.%d.attn.c_attn.weight", 1, 1, 1},
    {"qkvb", "h.%d.attn.c_attn.bias", 1, 0, 0},
    {"attprojw", "h.%d.attn.c_proj.weight", 1, 1, 1},
    {"attprojb", "h.%d.attn.c_proj.bias", 1, 0, 0},
    {"ln2w", "h.%d.ln_2.weight", 1, 0, 0},
    {"ln2b", "h.%d.ln_2.bias", 1, 0, 0},
    {"fcw", "h.%d.mlp.c_fc.weight", 1, 1, 1},
    {"fcb", "h.%d.mlp.c_fc.bias", 1, 0, 0},
    {"fcprojw", "h.%d.mlp.c_proj.weight", 1, 1, 1},
    {"fcprojb", "h.%d.mlp.c_proj.bias", 1, 0, 0},
    {"lnfw", "ln_f.weight", 0, 0, 0},
    {"lnfb", "ln_f.bias", 0, 0, 0},
};

/* One layer's slice shape (rows, cols) as stored here: weights are (out, in). */
static void slice_shape(const gpt2c_config *c, int id, int *rows, int *cols) {
    const int C = c->channels;
    int r = 1, k = C;
    switch (id) {
    case GPT2C_P_WTE: r = c->padded_vocab_size; break;
    case GPT2C_P_WPE: r = c->max_seq_len; break;
    case GPT2C_P_QKVW: r = 3 * C; break;
    case GPT2C_P_QKVB: k = 3 * C; break;
    case GPT2C_P_ATTPROJW: r = C; break;
    case GPT2C_P_FCW: r = 4 * C; break;
    case GPT2C_P_FCB: k = 4 * C; break;
    case GPT2C_P_FCPROJW: r = C; k = 4 * C; break;
    default: break; /* layernorm weights/biases and attproj/fcproj biases: (1, C) */
    }
    *rows = r;
    *cols = k;
}

static void layout(gpt2c_model *m) {
    size_t off = 0;
    m->num_params = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        gpt2c_param_info *pi = &m->info[id];
        pi->name = DESC[id].name;
        pi->hf_name = DESC[id].hf_name;
        pi->per_layer = DESC[id].per_layer;
        pi->hf_transposed = DESC[id].transposed;
        pi->decay = DESC[id].decay;
        slice_shape(&m->cfg, id, &pi->rows, &pi->cols);
        pi->ndim = pi->rows > 1 ? 2 : 1;
        pi->numel = (size_t)pi->rows * pi->cols * (pi->per_layer ? (size_t)m->cfg.num_layers : 1);
        pi->fmt = GPT2C_FMT_F32;
        pi->byte_offset = off;
        off += (gpt2c_format_bytes(pi->fmt, pi->numel) + 63) / 64 * 64; /* next tensor on a 64-byte boundary */
        m->num_params += pi->numel;
    }
    m->slab_floats = off / sizeof(float);
}

void gpt2c_param_hf_name(const gpt2c_param_info *pi, int layer, char *buf, size_t n) {
    if (pi->per_layer)
        snprintf(buf, n, pi->hf_name, layer);
    else
        snprintf(buf, n, "%s", pi->hf_name);
}

float *gpt2c_param_slice(const gpt2c_model *m, float *slab, int id, int layer) {
    const gpt2c_param_info *pi = &m->info[id];
    const size_t layer_bytes = gpt2c_format_bytes(pi->fmt, (size_t)pi->rows * pi->cols);
    return (float *)((char *)slab + pi->byte_offset + (pi->per_layer ? (size_t)layer * layer_bytes : 0));
}

gpt2c_tensor gpt2c_param_view(const gpt2c_model *m, float *slab, int id, int layer) {
    const gpt2c_param_info *pi = &m->info[id];
    gpt2c_tensor t = {pi->fmt, pi->rows, pi->cols, gpt2c_param_slice(m, slab, id, layer), NULL, NULL, 0};
    return t;
}

int gpt2c_model_set_threads(gpt2c_model *m, int n) {
    m->threads = gpt2c_set_threads(n);
    return m->threads;
}

int gpt2c_model_threads(const gpt2c_model *m) { return m->threads > 0 ? m->threads : gpt2c_get_threads(); }

gpt2c_status gpt2c_model_set_trainable(gpt2c_model *m, int id, int trainable) {
    if (id < 0 || id >= GPT2C_NUM_PARAM_TENSORS)
        return gpt2c_fail(GPT2C_ERR_ARG, "trainable: no parameter tensor #%d (0..%d)", id, GPT2C_NUM_PARAM_TENSORS - 1);
    const int was = m->trainable[id];
    trainable = trainable != 0;
    if (was == trainable) return GPT2C_OK;
    /* a frozen tensor's gradient stays zero (backward no longer writes it) */
    if (!trainable && m->grads_mem && !m->grads_zero)
        m->k->zero(gpt2c_param_slice(m, m->grads_mem, id, 0), m->info[id].numel);
    m->trainable[id] = (uint8_t)trainable;
    m->num_frozen += trainable ? -1 : 1;
    return GPT2C_OK;
}

static void point(gpt2c_model *m, float *slab, gpt2c_params *p) {
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) p->t[id] = gpt2c_param_slice(m, slab, id, 0);
}

gpt2c_status gpt2c_model_create(const gpt2c_config *cfg_in, gpt2c_model **out) {
    *out = NULL;
    gpt2c_config cfg = *cfg_in;
    GPT2C_TRY(gpt2c_config_check(&cfg, "model config"));
    gpt2c_model *m = calloc(1, sizeof *m);
    if (!m) return gpt2c_fail(GPT2C_ERR_NOMEM, "model: out of memory");
    m->cfg = cfg;
    layout(m);
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) m->trainable[id] = 1;
    m->params_mem = gpt2c_alloc_huge(m->slab_floats * sizeof(float), "parameters");
    if (!m->params_mem) {
        free(m);
        return GPT2C_ERR_NOMEM;
    }
    point(m, m->params_mem, &m->params);
    gpt2c_status st = gpt2c_kernels_get("cpu", &m->k);
    if (st != GPT2C_OK) {
        gpt2c_model_free(m);
        return st;
    }
    *out = m;
    return GPT2C_OK;
}

/* Every base tensor frozen (LoRA): no gradient slab, no moments. */
static int all_frozen(const gpt2c_model *m) { return m->num_frozen == GPT2C_NUM_PARAM_TENSORS; }

gpt2c_status gpt2c_model_alloc_grads(gpt2c_model *m) {
    if (m->grads_mem || all_frozen(m)) return GPT2C_OK;
    m->grads_mem = gpt2c_mem_alloc_huge(m->k, m->slab_floats * sizeof(float), "gradients");
    if (!m->grads_mem) return GPT2C_ERR_NOMEM;
    point(m, m->grads_mem, &m->grads);
    m->grads_zero = 0; /* a device allocation need not be zeroed: the first zero_grad does it */
    return GPT2C_OK;
}

gpt2c_status gpt2c_model_alloc_optimizer(gpt2c_model *m) {
    if (m->m_mem || all_frozen(m)) return GPT2C_OK;
    m->m_mem = gpt2c_mem_alloc_huge(m->k, m->slab_floats * sizeof(float), "AdamW first moments");
    m->v_mem = gpt2c_mem_alloc_huge(m->k, m->slab_floats * sizeof(float), "AdamW second moments");
    if (!m->m_mem || !m->v_mem) {
        gpt2c_mem_free(m->k, m->m_mem);
        gpt2c_mem_free(m->k, m->v_mem);
        m->m_mem = m->v_mem = NULL;
        return GPT2C_ERR_NOMEM;
    }
    return GPT2C_OK;
}

void gpt2c_model_free(gpt2c_model *m) {
    if (!m) return;
    gpt2c_lora_detach(m);
    gpt2c_qweights_free(m->qw);
    gpt2c_acts_free(m->acts);
    if (m->k) { /* NULL only when create failed before selecting kernels */
        gpt2c_mem_free(m->k, m->params_mem);
        gpt2c_mem_free(m->k, m->grads_mem);
        gpt2c_mem_free(m->k, m->m_mem);
        gpt2c_mem_free(m->k, m->v_mem);
    } else {
        gpt2c_free(m->params_mem);
    }
    gpt2c_free(m->params_host);
    gpt2c_free(m->bf16_mem);
    gpt2c_model_free_bf16_panels(m);
    free(m);
}

gpt2c_status gpt2c_model_set_backend(gpt2c_model *m, const char *backend) {
    const gpt2c_kernels *k;
    GPT2C_TRY(gpt2c_kernels_get(backend, &k));
    return gpt2c_model_use_kernels(m, k);
}

/* Moves params, grads and moments from m->k's memory into k's.  Each move is
 * all-or-nothing per slab; a failure part-way leaves slabs in two memories,
 * so the model is then unusable (the caller should free it). */
static gpt2c_status move_slabs(gpt2c_model *m, const gpt2c_kernels *k) {
    const size_t bytes = m->slab_floats * sizeof(float);
    GPT2C_TRY(gpt2c_mem_move(m->k, k, (void **)&m->params_mem, bytes, "parameters"));
    GPT2C_TRY(gpt2c_mem_move(m->k, k, (void **)&m->grads_mem, bytes, "gradients"));
    GPT2C_TRY(gpt2c_mem_move(m->k, k, (void **)&m->m_mem, bytes, "AdamW first moments"));
    GPT2C_TRY(gpt2c_mem_move(m->k, k, (void **)&m->v_mem, bytes, "AdamW second moments"));
    point(m, m->params_mem, &m->params);
    if (m->grads_mem) point(m, m->grads_mem, &m->grads);
    if (gpt2c_mem_is_device(k) && !m->params_host) {
        m->params_host = gpt2c_alloc(bytes, "parameters (host mirror)");
        if (!m->params_host) return GPT2C_ERR_NOMEM;
    } else if (!gpt2c_mem_is_device(k)) {
        gpt2c_free(m->params_host);
        m->params_host = NULL;
    }
    return GPT2C_OK;
}

gpt2c_status gpt2c_model_use_kernels(gpt2c_model *m, const gpt2c_kernels *k) {
    if (m->lora && k->dev_alloc)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend '%s': LoRA adapters run on host backends only (cpu, blas, ref)",
                          k->name);
    if (m->bf16_mem && !GPT2C_KERNELS_TAKES(k, matmul_forward, GPT2C_FMT_BF16))
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend %s: it has no bf16 GEMM and the model computes in bf16",
                          k->name);
    if (k != m->k) gpt2c_model_free_bf16_panels(m); /* another backend's, if any, are made at its first update */
    if (k->dev_alloc != m->k->dev_alloc) {
        /* another memory: activations are dropped and re-planned there */
        int B = m->B, T = m->T, had = m->acts != NULL;
        gpt2c_acts_free(m->acts);
        m->acts = NULL;
        m->have_targets = 0;
        GPT2C_TRY(move_slabs(m, k));
        m->k = k;
        return had ? gpt2c_model_prepare(m, B, T) : GPT2C_OK;
    }
    if (m->acts && k->attention_state_floats != m->k->attention_state_floats) {
        /* the per-layer attention state is backend-specific: re-plan */
        gpt2c_acts_free(m->acts);
        m->acts = NULL;
        int B = m->B, T = m->T;
        m->k = k;
        return gpt2c_model_prepare(m, B, T);
    }
    m->k = k;
    return GPT2C_OK;
}

/* Fills n floats with N(0, std) from independent 64K-element chunks, each
 * seeded by (seed, tensor, chunk): identical for any thread count. */
static void fill_normal(float *x, size_t n, float std, uint64_t seed, int tensor) {
    const size_t chunk = 65536;
    const long nchunks = (long)((n + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (long c = 0; c < nchunks; c++) {
        gpt2c_rng r;
        gpt2c_rng_seed(&r, seed, ((uint64_t)tensor << 40) | (uint64_t)c);
        size_t end = ((size_t)c + 1) * chunk < n ? ((size_t)c + 1) * chunk : n;
        for (size_t i = (size_t)c * chunk; i < end; i++) x[i] = std * gpt2c_rng_normal(&r);
    }
}

gpt2c_status gpt2c_model_params_host(const gpt2c_model *m, float **host) {
    if (!m->params_host) {
        *host = m->params_mem;
        return GPT2C_OK;
    }
    GPT2C_TRY(gpt2c_mem_download(m->k, m->params_host, m->params_mem, m->slab_floats * sizeof(float)));
    *host = m->params_host;
    return GPT2C_OK;
}

gpt2c_status gpt2c_model_slab_to_host(const gpt2c_model *m, const float *slab, const float **host) {
    *host = slab;
    if (!slab || !gpt2c_mem_is_device(m->k)) return GPT2C_OK;
    const size_t bytes = m->slab_floats * sizeof(float);
    float *h = gpt2c_alloc(bytes, "host copy of a device slab");
    if (!h) return GPT2C_ERR_NOMEM;
    gpt2c_status st = gpt2c_mem_download(m->k, h, slab, bytes);
    if (st != GPT2C_OK) {
        gpt2c_free(h);
        return st;
    }
    *host = h;
    return GPT2C_OK;
}

void gpt2c_model_slab_host_free(const float *slab, const float *host) {
    if (host && host != slab) gpt2c_free((void *)host);
}

gpt2c_status gpt2c_model_params_upload(gpt2c_model *m) {
    m->bf16_stale = 1; /* the bf16 copies (if any) follow at the next forward */
    if (!m->params_host) return GPT2C_OK;
    return gpt2c_mem_upload(m->k, m->params_mem, m->params_host, m->slab_floats * sizeof(float));
}

void gpt2c_model_init_random(gpt2c_model *m, uint64_t seed) {
    const gpt2c_config *c = &m->cfg;
    const float std = 0.02f, resid_std = 0.02f / sqrtf(2.0f * c->num_layers);
    float *host = m->params_host ? m->params_host : m->params_mem;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        float *p = gpt2c_param_slice(m, host, id, 0);
        size_t n = m->info[id].numel;
        switch (id) {
        case GPT2C_P_WTE:
            fill_normal(p, (size_t)c->vocab_size * c->channels, std, seed, id);
            memset(p + (size_t)c->vocab_size * c->channels, 0,
                   sizeof(float) * (size_t)(c->padded_vocab_size - c->vocab_size) * c->channels);
            break;
        case GPT2C_P_WPE:
        case GPT2C_P_QKVW:
        case GPT2C_P_FCW: fill_normal(p, n, std, seed, id); break;
        case GPT2C_P_ATTPROJW:
        case GPT2C_P_FCPROJW: fill_normal(p, n, resid_std, seed, id); break;
        case GPT2C_P_LN1W:
        case GPT2C_P_LN2W:
        case GPT2C_P_LNFW:
            for (size_t i = 0; i < n; i++) p[i] = 1.0f;
            break;
        default: memset(p, 0, n * sizeof(float)); break; /* biases */
        }
    }
    m->bf16_stale = 1;
    /* device backend: send the host mirror (an error latches until the next device_check) */
    if (m->params_host) (void)gpt2c_model_params_upload(m);
}

gpt2c_model_bytes gpt2c_model_memory(const gpt2c_model *m) {
    gpt2c_model_bytes b = {0};
    const size_t slab = m->slab_floats * sizeof(float);
    b.params = slab;
    if (m->qw) {
        /* the fp32 slices of the quantized weights were given back (gpt2c_quant_release_fp32) */
        for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++)
            for (int l = 0; l < (m->info[id].per_layer ? m->cfg.num_layers : 1); l++) {
                const gpt2c_tensor *t = gpt2c_qweight(m, id, l);
                if (!t) continue;
                b.params -= (size_t)m->info[id].rows * m->info[id].cols * sizeof(float);
                b.quantized += gpt2c_quant_code_bytes(t->fmt, t->rows, t->cols, t->block) +
                               sizeof(float) * gpt2c_quant_nscales(t->fmt, t->rows, t->cols, t->block);
            }
    }
    b.grads = m->grads_mem ? slab : 0;
    b.moments = m->m_mem ? 2 * slab : 0;
    b.bf16_copies = m->bf16_mem ? m->slab_floats * sizeof(uint16_t) : 0;
    b.bf16_panels = m->panels_bytes; /* 0 when none */
    if (m->acts) {
        b.acts = m->acts->bytes;
        b.acts_backward = m->acts->bbytes;
    }
    if (m->lora) {
        gpt2c_lora_bytes lb = gpt2c_lora_memory(m->lora);
        b.lora_params = lb.params;
        b.lora_state = lb.grads + lb.moments;
        b.lora_acts = lb.acts;
    }
    return b;
}

long long gpt2c_model_huge_page_bytes(const gpt2c_model *m, size_t *slab_bytes) {
    const gpt2c_model_bytes b = gpt2c_model_memory(m); /* its params leave out quantized tensors: the slab is whole */
    const size_t bytes = m->slab_floats * sizeof(float) + b.grads + b.moments + b.bf16_copies + b.bf16_panels;
    const void *blocks[6] = {m->params_mem, m->grads_mem, m->m_mem, m->v_mem, m->bf16_mem, m->panels_mem};
    if (slab_bytes) *slab_bytes = bytes;
    if (m->k && m->k->dev_alloc) return -1; /* device memory (the fp32 weights stay on the host, the rest does not) */
    const long long h = gpt2c_huge_page_bytes(blocks, 6);
    return h > (long long)bytes ? (long long)bytes : h; /* a mapping may hold more than its slab */
}
