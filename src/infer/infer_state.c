/* Planning and bookkeeping of the inference state (src/infer/infer_state.h). */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "gpt2c/core.h"
#include "gpt2c/lora.h"
#include "gpt2c/precision.h"
#include "gpt2c/quant.h"
#include "infer/infer_state.h"
#include "kernels/bf16_rows.h"
#include "kernels/kernels.h"
#include "model/gpt2_block.h"
#include "model/model_internal.h"

/* Decode streams every weight once per step.  Backed by 2 MiB pages, the
 * stream crosses 512x fewer page boundaries (the hardware prefetchers stop at
 * each) and needs 512x fewer TLB entries. */
int gpt2c_infer_hugepages(const gpt2c_model *m) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    /* bf16 precision: the bf16 copies are what decode streams (the fp32 ones may be given back) */
    const char *base = m->bf16_mem ? (const char *)m->bf16_mem : (const char *)m->params_mem;
    const size_t bytes = m->slab_floats * (m->bf16_mem ? sizeof(uint16_t) : sizeof(float));
    const uintptr_t lo = ((uintptr_t)base + huge - 1) & ~(huge - 1);
    const uintptr_t hi = ((uintptr_t)(base + bytes)) & ~(huge - 1);
    if (!m->params_mem || (m->k && m->k->dev_alloc) || hi <= lo) return 0; /* not host memory */
    (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* Linux >= 6.1 */
#endif
    return madvise((void *)lo, hi - lo, MADV_COLLAPSE) == 0;
#else
    (void)m;
    return 0;
#endif
}

static int block_matmuls(void) {
    int n = 0;
    for (int i = 0; i < GPT2C_BLOCK_NSTAGES; i++) n += gpt2c_block_stages[i].kind == GPT2C_STAGE_MATMUL;
    return n;
}

gpt2c_status gpt2c_infer_create(const gpt2c_model *m, int batch, int ctx, int chunk, gpt2c_infer **out) {
    *out = NULL;
    const gpt2c_config *c = &m->cfg;
    if (batch <= 0 || batch > 4096) return gpt2c_fail(GPT2C_ERR_ARG, "batch: %d sequences (want 1..4096)", batch);
    if (ctx <= 0) ctx = c->max_seq_len;
    if (ctx > c->max_seq_len)
        return gpt2c_fail(GPT2C_ERR_ARG, "context: %d is longer than the model's context of %d", ctx, c->max_seq_len);
    if (chunk <= 0) chunk = ctx < 512 ? ctx : 512;
    if (chunk > ctx) chunk = ctx;
    const int R = chunk > batch ? chunk : batch;
    const size_t C = (size_t)c->channels, L = (size_t)c->num_layers, Vp = (size_t)c->padded_vocab_size;
    if (!m->k->matmul_infer_range || !m->k->kv_write || !m->k->attention_kv_range)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend '%s' has no inference kernels yet (use cpu or ref)",
                          m->k->name);
    if (gpt2c_model_kv_cache(m) == GPT2C_KV_BF16 && (!m->k->kv_write_bf16 || !m->k->attention_kv_bf16_range))
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "KV cache: backend '%s' has no bf16 cache kernels (use an f32 cache)",
                          m->k->name);
    if (m->k->dev_alloc)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend '%s': inference in device memory is not supported yet",
                          m->k->name);
    if (c->channels % c->num_heads != 0)
        return gpt2c_fail(GPT2C_ERR_ARG, "model: %d channels do not split into %d heads", c->channels, c->num_heads);

    gpt2c_infer *s = gpt2c_alloc(sizeof *s, "inference state");
    if (!s) return GPT2C_ERR_NOMEM;
    s->m = m;
    s->B = batch;
    s->ctx = ctx;
    s->chunk = chunk;
    s->R = R;
    s->layer_cache = (size_t)batch * C * ctx;
    s->kv_bf16 = gpt2c_model_kv_cache(m) == GPT2C_KV_BF16;
    /* every buffer rounded up to 16 floats, so each starts 64-byte aligned; a bf16 cache takes half the floats */
#define RUP(n) (((size_t)(n) + 15) & ~(size_t)15)
    const size_t cache_floats = s->kv_bf16 ? RUP((L * s->layer_cache + 1) / 2) : RUP(L * s->layer_cache);
    /* the bf16 rows of a matmul's input (infer_forward.c: bf16 weights on a
     * table that takes them, prefill-sized passes): (R, 4C) in the table's
     * form (kernels/bf16_rows.h), in floats' room */
    const int bf16_rows = m->k->infer_bf16_input &&
                          (gpt2c_model_precision(m) == GPT2C_FMT_BF16 ||
                           (gpt2c_model_qweights(m) && gpt2c_qmatmul_bf16_prefill())) &&
                          R >= GPT2C_INFER_GEMM_ROWS;
    const size_t sizes[] = {cache_floats, cache_floats, RUP(R * C), RUP(R * C), RUP(R * C),
                            RUP(R),                  RUP(R),                  RUP(R * 3 * C), RUP(R * C), RUP(R * C),
                            RUP(R * 4 * C),          RUP((size_t)batch * Vp),
                            bf16_rows ? RUP((R * gpt2c_bf16_in_row_bytes(m->k->infer_bf16_input, 4 * C) + 3) / 4) : 0};
    float *xbf = NULL;
    float **dst[] = {&s->kc, &s->vc, &s->x, &s->x2, &s->ln, &s->mean, &s->rstd, &s->qkv, &s->atty, &s->proj,
                     &s->fch, &s->logits, &xbf};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += sizes[i];
    s->floats = total;
    /* decode reads every cached position each step: in 2 MiB pages, as the weights (gpt2c_alloc_huge) */
    s->mem = gpt2c_alloc_huge(total * sizeof(float), "KV cache and inference buffers");
    s->pos = gpt2c_alloc(sizeof(int) * (size_t)(batch + R), "inference positions");
    s->tok = gpt2c_alloc(sizeof(int32_t) * (size_t)R, "inference tokens");
    /* stages of one pass: encoder, blocks, LM head (+2 spare); with bf16 rows, one more (the rounding) per matmul */
    s->nctr = gpt2c_infer_block_stage_count() * (int)L + 4 + (bf16_rows ? block_matmuls() * (int)L + 1 : 0);
    if (m->lora) { /* unmerged adapters: up to 3 more stages per adapted matmul (x A^T, + t B^T, gelu) */
        s->nctr += 3 * GPT2C_LORA_NUM_SITES * (int)L;
        s->lora_t = gpt2c_alloc(sizeof(float) * (size_t)R * gpt2c_lora_config(m->lora)->rank, "LoRA inference rows");
        if (!s->lora_t) s->mem = (gpt2c_free(s->mem), NULL); /* reported below */
    }
    s->ctr = gpt2c_alloc(sizeof(gpt2c_stage_ctr) * (size_t)s->nctr, "inference stage counters");
    if (!s->mem || !s->pos || !s->tok || !s->ctr) {
        gpt2c_infer_free(s);
        return GPT2C_ERR_NOMEM;
    }
    s->rpos = s->pos + batch;
    float *p = s->mem;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        *dst[i] = p;
        p += sizes[i];
    }
    if (s->kv_bf16) { /* the two cache buffers hold bf16 */
        s->kc16 = (uint16_t *)s->kc, s->vc16 = (uint16_t *)s->vc;
        s->kc = s->vc = NULL;
    }
    s->xbf = bf16_rows ? (void *)xbf : NULL;
#undef RUP
    *out = s;
    return GPT2C_OK;
}

void gpt2c_infer_free(gpt2c_infer *s) {
    if (!s) return;
    gpt2c_free(s->mem);
    gpt2c_free(s->pos);
    gpt2c_free(s->tok);
    gpt2c_free(s->ctr);
    gpt2c_free(s->lora_t);
    gpt2c_free(s);
}

int gpt2c_infer_batch(const gpt2c_infer *s) { return s->B; }
int gpt2c_infer_ctx(const gpt2c_infer *s) { return s->ctx; }
int gpt2c_infer_pos(const gpt2c_infer *s, int seq) { return seq >= 0 && seq < s->B ? s->pos[seq] : -1; }
size_t gpt2c_infer_bytes(const gpt2c_infer *s) {
    return s->floats * sizeof(float) + sizeof(int) * (size_t)(s->B + s->R) + sizeof(int32_t) * (size_t)s->R;
}

void gpt2c_infer_reset(gpt2c_infer *s, int seq) {
    for (int b = 0; b < s->B; b++)
        if (seq < 0 || b == seq) s->pos[b] = 0;
}

gpt2c_status gpt2c_infer_copy_seq(gpt2c_infer *s, int dst, int src) {
    if (dst < 0 || dst >= s->B || src < 0 || src >= s->B)
        return gpt2c_fail(GPT2C_ERR_RANGE, "copy_seq: sequence %d -> %d outside [0, %d)", src, dst, s->B);
    if (dst == src) return GPT2C_OK;
    const gpt2c_config *c = &s->m->cfg;
    const size_t C = (size_t)c->channels, hs = C / (size_t)c->num_heads, n = (size_t)s->pos[src];
    const size_t seqf = C * (size_t)s->ctx; /* one sequence's elements in one layer's cache */
    const size_t es = s->kv_bf16 ? sizeof(uint16_t) : sizeof(float);
    char *kc = s->kv_bf16 ? (char *)s->kc16 : (char *)s->kc, *vc = s->kv_bf16 ? (char *)s->vc16 : (char *)s->vc;
    for (int l = 0; l < c->num_layers; l++) {
        const size_t base = (size_t)l * s->layer_cache;
        /* keys (NH, hs, ctx): the first n of each of the NH*hs rows */
        for (size_t r = 0; r < C; r++)
            memcpy(kc + (base + dst * seqf + r * s->ctx) * es, kc + (base + src * seqf + r * s->ctx) * es, n * es);
        /* values (NH, ctx, hs): the first n*hs of each head */
        for (int h = 0; h < c->num_heads; h++)
            memcpy(vc + (base + dst * seqf + h * s->ctx * hs) * es, vc + (base + src * seqf + h * s->ctx * hs) * es,
                   n * hs * es);
    }
    const size_t Vp = (size_t)c->padded_vocab_size;
    memcpy(s->logits + dst * Vp, s->logits + src * Vp, Vp * sizeof(float));
    s->pos[dst] = s->pos[src];
    return GPT2C_OK;
}

const float *gpt2c_infer_logits(const gpt2c_infer *s, int seq) {
    return s->logits + (size_t)seq * s->m->cfg.padded_vocab_size;
}

void gpt2c_model_set_kv_cache(gpt2c_model *m, gpt2c_kv_cache kv) { m->kv_cache = (int)kv; }

gpt2c_kv_cache gpt2c_model_kv_cache(const gpt2c_model *m) {
    if (m->kv_cache == GPT2C_KV_F32 || m->kv_cache == GPT2C_KV_BF16) return (gpt2c_kv_cache)m->kv_cache;
    /* AUTO: bf16 for quantized weights, and in bf16 precision on a backend with bf16 cache kernels */
    const int bf16_ok = m->k && m->k->kv_write_bf16 && m->k->attention_kv_bf16_range;
    return m->qw || (gpt2c_model_precision(m) == GPT2C_FMT_BF16 && bf16_ok) ? GPT2C_KV_BF16 : GPT2C_KV_F32;
}

gpt2c_kv_cache gpt2c_infer_kv_cache(const gpt2c_infer *s) { return s->kv_bf16 ? GPT2C_KV_BF16 : GPT2C_KV_F32; }

const char *gpt2c_kv_cache_name(gpt2c_kv_cache kv) {
    return kv == GPT2C_KV_BF16 ? "bf16" : kv == GPT2C_KV_F32 ? "f32" : "auto";
}

int gpt2c_kv_cache_parse(const char *name, gpt2c_kv_cache *out) {
    static const struct { const char *name; gpt2c_kv_cache kv; } names[] = {
        {"auto", GPT2C_KV_AUTO}, {"f32", GPT2C_KV_F32}, {"fp32", GPT2C_KV_F32}, {"bf16", GPT2C_KV_BF16}};
    for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i].name) == 0) return *out = names[i].kv, 0;
    return -1;
}
