/* A quantized GPT-2: which weights are quantized, their codes and scales, and
 * the safetensors form (gpt2c quantize writes it, gpt2c_model_load reads it).
 *
 * File layout (all tensors under "transformer.<HF name>"):
 *   fp32 tensors (biases, layernorms, wpe, and --keep'd weights) exactly as
 *   gpt2c_model_save writes them (HF names, Conv1D weights as (in, out)).
 *   A quantized weight W (out, in) -- blocks along `in`:
 *     NAME            q8: I8 (out, in); q4 / nf4: U8 (out, in/2) -- the codes
 *     NAME.scales     F32 (out, in/block)                 (not double-quantized)
 *     NAME.absmax_q   U8 (out * in/block)                 (nf4 double quantization:
 *     NAME.absmax2    F32 (ceil(out * in/block / 256))     bitsandbytes' nested
 *     NAME.absmax_offset F32 (1)                           absmax, gpt2c/quant.h)
 *   wte (tied with the LM head) has the vocabulary's V rows.
 *   __metadata__: gpt2c_model_save's config keys, plus
 *     gpt2c.quant.format (q8|q4|nf4), gpt2c.quant.block, gpt2c.quant.double_quant,
 *     and "gpt2c.quant:NAME" = "FORMAT/BLOCK" for every quantized tensor. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "gpt2c/io.h"
#include "gpt2c/quant.h"
#include "gpt2c/quant_model.h"
#include "quant/quant_arena.h"
#include "io/io_internal.h"
#include "model/model_internal.h"

static int is_linear(int id) {
    return id == GPT2C_P_QKVW || id == GPT2C_P_ATTPROJW || id == GPT2C_P_FCW || id == GPT2C_P_FCPROJW ||
           id == GPT2C_P_WTE;
}

/* "h.0.attn.c_attn.weight" matches a keep list entry "h.0.attn.c_attn.weight",
 * "c_attn" (every layer's), or "wte". Entries are comma-separated. */
static int kept(const char *keep, const char *hf) {
    if (!keep) return 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", keep);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, hf) == 0) return 1;
        const size_t n = strlen(tok);
        const char *p = strstr(hf, tok);
        if (p && (p == hf || p[-1] == '.') && (p[n] == '.' || p[n] == 0)) return 1;
    }
    return 0;
}

void gpt2c_qweights_free(gpt2c_qweights *q) {
    if (!q) return;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        if (!q->t[id]) continue;
        for (int l = 0; l < q->layers[id]; l++)
            if (q->t[id][l].fmt != GPT2C_FMT_F32) {
                if (!q->arena) free(q->t[id][l].data), free(q->t[id][l].scales);
                free(q->t[id][l].aux);
            }
        free(q->t[id]);
    }
    gpt2c_qweights_arena_free(q);
    free(q);
}

/* One weight's tensor rows: wte has Vp rows in memory (pad rows zero). */
static void weight_shape(const gpt2c_model *m, int id, int64_t *rows, int64_t *cols) {
    *rows = id == GPT2C_P_WTE ? m->cfg.padded_vocab_size : m->info[id].rows;
    *cols = m->info[id].cols;
}

static gpt2c_status qtensor_alloc(gpt2c_tensor *t, gpt2c_format f, int block, int64_t rows, int64_t cols,
                                  const char *what) {
    t->fmt = f, t->rows = rows, t->cols = cols, t->block = gpt2c_quant_block(f, block), t->aux = NULL;
    t->data = malloc(gpt2c_quant_code_bytes(f, rows, cols, block));
    t->scales = malloc(sizeof(float) * gpt2c_quant_nscales(f, rows, cols, block));
    if (!t->data || !t->scales) {
        free(t->data), free(t->scales);
        t->data = NULL, t->scales = NULL, t->fmt = GPT2C_FMT_F32;
        return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory for its quantized codes", what);
    }
    return GPT2C_OK;
}

static gpt2c_status qweights_new(const gpt2c_model *m, gpt2c_format f, int block, int dq, gpt2c_qweights **out) {
    gpt2c_qweights *q = calloc(1, sizeof *q);
    if (!q) return gpt2c_fail(GPT2C_ERR_NOMEM, "quantize: out of memory");
    q->fmt = f, q->block = gpt2c_quant_block(f, block), q->double_quant = f == GPT2C_FMT_NF4 && dq;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        if (!is_linear(id)) continue;
        q->layers[id] = m->info[id].per_layer ? m->cfg.num_layers : 1;
        q->t[id] = calloc((size_t)q->layers[id], sizeof(gpt2c_tensor));
        if (!q->t[id]) {
            gpt2c_qweights_free(q);
            return gpt2c_fail(GPT2C_ERR_NOMEM, "quantize: out of memory");
        }
        for (int l = 0; l < q->layers[id]; l++) { /* fp32 views of the slab until quantized */
            int64_t r, c;
            weight_shape(m, id, &r, &c);
            q->t[id][l] = gpt2c_tensor_f32(gpt2c_param_slice(m, m->params_mem, id, l), r, c);
        }
    }
    *out = q;
    return GPT2C_OK;
}

/* The format of each weight: the chosen one; wte (the LM head) q8 under q4 / nf4. */
static gpt2c_format weight_format(gpt2c_format f, int id) {
    return id == GPT2C_P_WTE && f != GPT2C_FMT_Q8 ? GPT2C_FMT_Q8 : f;
}
static int weight_block(const gpt2c_qweights *q, gpt2c_format wf) { return wf == q->fmt ? q->block : 0; }

gpt2c_status gpt2c_quantize_model(gpt2c_model *m, gpt2c_format f, int block, int double_quant, const char *keep) {
    if (m->qw) return gpt2c_fail(GPT2C_ERR_ARG, "quantization: the model is already quantized (%s)",
                                 gpt2c_format_get(m->qw->fmt)->name);
    if (!gpt2c_format_is_quantized(f)) return gpt2c_fail(GPT2C_ERR_ARG, "format: not a quantized format");
    gpt2c_qweights *q = NULL;
    GPT2C_TRY(qweights_new(m, f, block, double_quant, &q));
    gpt2c_status st = GPT2C_OK;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS && st == GPT2C_OK; id++)
        for (int l = 0; l < q->layers[id] && st == GPT2C_OK; l++) {
            char hf[200];
            gpt2c_param_hf_name(&m->info[id], l, hf, sizeof hf);
            if (kept(keep, hf)) continue;
            gpt2c_tensor *t = &q->t[id][l];
            const gpt2c_format wf = weight_format(f, id);
            const int wb = weight_block(q, wf);
            const float *src = t->data;
            st = gpt2c_quant_check(wf, t->rows, t->cols, wb, hf);
            if (st == GPT2C_OK) st = qtensor_alloc(t, wf, wb, t->rows, t->cols, hf);
            if (st != GPT2C_OK) break;
            gpt2c_quant_pack(wf, wb, src, t->rows, t->cols, t->data, t->scales);
            if (wf == GPT2C_FMT_NF4 && q->double_quant) { /* the scales the file holds; memory gets them expanded */
                const size_t n = gpt2c_quant_nscales(wf, t->rows, t->cols, wb), nb = (n + 255) / 256;
                gpt2c_nf4_dq *dq = malloc(sizeof *dq + sizeof(float) * nb + n);
                if (!dq) {
                    st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", hf);
                    break;
                }
                dq->n = n, dq->absmax2 = (float *)(dq + 1), dq->codes8 = (uint8_t *)(dq->absmax2 + nb);
                gpt2c_nf4_dq_pack(t->scales, n, dq->codes8, dq->absmax2, &dq->offset);
                gpt2c_nf4_dq_unpack(dq->codes8, dq->absmax2, dq->offset, n, t->scales);
                t->aux = dq;
            }
        }
    if (st != GPT2C_OK) {
        gpt2c_qweights_free(q);
        return st;
    }
    gpt2c_qweights_pack_arena(q);
    m->qw = q;
    /* an update's stale weight gradients: a backward on quantized weights writes none over them */
    if (m->grads_stale) gpt2c_model_zero_grad_slab(m);
    return GPT2C_OK;
}

gpt2c_status gpt2c_quant_dequantize_params(gpt2c_model *m) {
    gpt2c_qweights *q = m->qw;
    if (!q) return GPT2C_OK;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++)
        for (int l = 0; l < q->layers[id]; l++) {
            const gpt2c_tensor *t = &q->t[id][l];
            if (t->fmt != GPT2C_FMT_F32) gpt2c_quant_unpack(t, gpt2c_param_slice(m, m->params_mem, id, l));
        }
    return GPT2C_OK;
}

const gpt2c_tensor *gpt2c_qweight(const gpt2c_model *m, int id, int layer) {
    if (!m->qw || !m->qw->t[id]) return NULL;
    const gpt2c_tensor *t = &m->qw->t[id][layer];
    return t->fmt == GPT2C_FMT_F32 ? NULL : t;
}

void gpt2c_quant_release_fp32(gpt2c_model *m) {
#if defined(__linux__)
    if (!m->qw) return;
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++)
        for (int l = 0; l < m->qw->layers[id]; l++) {
            if (!gpt2c_qweight(m, id, l)) continue;
            const uintptr_t a = (uintptr_t)gpt2c_param_slice(m, m->params_mem, id, l);
            const uintptr_t b = a + sizeof(float) * (m->info[id].numel / (size_t)m->qw->layers[id]);
            const uintptr_t lo = (a + page - 1) / page * page, hi = b / page * page;
            if (hi > lo) madvise((void *)lo, hi - lo, MADV_DONTNEED); /* reads as zeros from now on */
        }
#else
    (void)m;
#endif
}

size_t gpt2c_quant_weight_bytes(const gpt2c_model *m) {
    size_t bytes = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        const int layers = m->info[id].per_layer ? m->cfg.num_layers : 1;
        for (int l = 0; l < layers; l++) {
            const gpt2c_tensor *t = gpt2c_qweight(m, id, l);
            if (t)
                bytes += gpt2c_quant_code_bytes(t->fmt, t->rows, t->cols, t->block) +
                         sizeof(float) * gpt2c_quant_nscales(t->fmt, t->rows, t->cols, t->block);
            else
                bytes += sizeof(float) * (m->info[id].numel / (size_t)layers);
        }
    }
    return bytes;
}

/* ---- save ---- */

typedef struct { /* buffers that must live until the write */
    void *p[4 * 64 * 8];
    int n;
} keepalive;

static void *hold(keepalive *k, void *p) {
    if (p && k->n < (int)(sizeof k->p / sizeof k->p[0])) k->p[k->n++] = p;
    else if (p) { free(p); return NULL; }
    return p;
}

gpt2c_status gpt2c_quant_save(const gpt2c_model *m, const char *path) {
    const gpt2c_qweights *q = m->qw;
    const gpt2c_config *c = &m->cfg;
    if (!q) return gpt2c_fail(GPT2C_ERR_ARG, "%s: the model is not quantized", path);
    keepalive *ka = calloc(1, sizeof *ka);
    gpt2c_st_writer *w = NULL;
    gpt2c_status st = ka ? gpt2c_st_writer_new(&w) : gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
    char (*metakeys)[300] = calloc(5 * (size_t)c->num_layers + 8, 300);
    char (*metavals)[32] = calloc(5 * (size_t)c->num_layers + 8, 32);
    int nmeta = 0;
    if (!metakeys || !metavals) st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS && st == GPT2C_OK; id++) {
        const gpt2c_param_info *pi = &m->info[id];
        const int layers = pi->per_layer ? c->num_layers : 1;
        for (int l = 0; l < layers && st == GPT2C_OK; l++) {
            char hf[200], name[256], sub[300];
            gpt2c_param_hf_name(pi, l, hf, sizeof hf);
            snprintf(name, sizeof name, "transformer.%s", hf);
            const gpt2c_tensor *t = gpt2c_qweight(m, id, l);
            const float *src = gpt2c_param_slice(m, m->params_mem, id, l);
            if (!t) { /* fp32, as gpt2c_model_save writes it */
                int64_t shape[2];
                int nd = 2;
                if (id == GPT2C_P_WTE) {
                    shape[0] = c->vocab_size, shape[1] = pi->cols;
                } else if (pi->hf_transposed) {
                    const int R = pi->rows, K = pi->cols;
                    float *stage = hold(ka, malloc(sizeof(float) * (size_t)R * K));
                    if (!stage) { st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path); break; }
                    for (int r = 0; r < R; r++)
                        for (int k = 0; k < K; k++) stage[(size_t)k * R + r] = src[(size_t)r * K + k];
                    src = stage, shape[0] = K, shape[1] = R;
                } else if (id == GPT2C_P_WPE || pi->ndim == 2) {
                    shape[0] = pi->rows, shape[1] = pi->cols;
                } else {
                    nd = 1, shape[0] = pi->cols;
                }
                st = gpt2c_st_writer_add(w, name, GPT2C_DT_F32, nd, shape, src);
                continue;
            }
            const int64_t rows = id == GPT2C_P_WTE ? c->vocab_size : t->rows; /* the file holds V rows */
            const int64_t nsc = rows * (t->cols / t->block);
            int64_t shape[2] = {rows, t->fmt == GPT2C_FMT_Q8 ? t->cols : t->cols / 2};
            st = gpt2c_st_writer_add(w, name, t->fmt == GPT2C_FMT_Q8 ? GPT2C_DT_I8 : GPT2C_DT_U8, 2, shape, t->data);
            if (st == GPT2C_OK && t->fmt == GPT2C_FMT_NF4 && t->aux) {
                const gpt2c_nf4_dq *dq = t->aux;
                const int64_t nb = (nsc + 255) / 256, one = 1;
                snprintf(sub, sizeof sub, "%s.absmax_q", name);
                st = gpt2c_st_writer_add(w, sub, GPT2C_DT_U8, 1, &nsc, dq->codes8);
                snprintf(sub, sizeof sub, "%s.absmax2", name);
                if (st == GPT2C_OK) st = gpt2c_st_writer_add(w, sub, GPT2C_DT_F32, 1, &nb, dq->absmax2);
                snprintf(sub, sizeof sub, "%s.absmax_offset", name);
                if (st == GPT2C_OK) st = gpt2c_st_writer_add(w, sub, GPT2C_DT_F32, 1, &one, &dq->offset);
            } else if (st == GPT2C_OK) {
                int64_t sshape[2] = {rows, t->cols / t->block};
                snprintf(sub, sizeof sub, "%s.scales", name);
                st = gpt2c_st_writer_add(w, sub, GPT2C_DT_F32, 2, sshape, t->scales);
            }
            snprintf(metakeys[nmeta], 300, "gpt2c.quant:%s", name);
            snprintf(metavals[nmeta], 32, "%s/%d", gpt2c_format_get(t->fmt)->name, (int)t->block);
            if (st == GPT2C_OK) st = gpt2c_st_writer_meta(w, metakeys[nmeta], metavals[nmeta]);
            nmeta++;
        }
    }
    char num[9][32];
    if (st == GPT2C_OK) st = gpt2c_st_writer_config_meta(w, c);
    snprintf(num[6], sizeof num[6], "%d", q->block);
    snprintf(num[7], sizeof num[7], "%d", q->double_quant);
    if (st == GPT2C_OK) st = gpt2c_st_writer_meta(w, GPT2C_QUANT_META_FORMAT, gpt2c_format_get(q->fmt)->name);
    if (st == GPT2C_OK) st = gpt2c_st_writer_meta(w, "gpt2c.quant.block", num[6]);
    if (st == GPT2C_OK) st = gpt2c_st_writer_meta(w, "gpt2c.quant.double_quant", num[7]);
    if (st == GPT2C_OK) st = gpt2c_st_writer_write(w, path);
    gpt2c_st_writer_free(w);
    if (ka)
        for (int i = 0; i < ka->n; i++) free(ka->p[i]);
    free(ka), free(metakeys), free(metavals);
    return st;
}
