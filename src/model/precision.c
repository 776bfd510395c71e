/* bf16 precision (gpt2c/precision.h): the bf16 copies of the matmul weights,
 * their refresh from the fp32 master weights, and inference's release of the
 * fp32 copies. */
#include "gpt2c/precision.h"

#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "gpt2c/quant_model.h"
#include "kernels/bf16.h"
#include "kernels/kernels.h"
#include "model/model_internal.h"

int gpt2c_precision_parse(const char *s, gpt2c_format *out) {
    if (!s) return -1;
    if (strcmp(s, "fp32") == 0 || strcmp(s, "f32") == 0) *out = GPT2C_FMT_F32;
    else if (strcmp(s, "bf16") == 0) *out = GPT2C_FMT_BF16;
    else return -1;
    return 0;
}

const char *gpt2c_precision_name(gpt2c_format p) { return p == GPT2C_FMT_BF16 ? "bf16" : "fp32"; }

int gpt2c_precision_has_copy(int id) { return gpt2c_param_is_matmul_weight(id); }

gpt2c_format gpt2c_model_precision(const gpt2c_model *m) { return m->bf16_mem ? GPT2C_FMT_BF16 : GPT2C_FMT_F32; }

int gpt2c_model_attention_bf16(const gpt2c_model *m) {
    return m->bf16_mem && m->k->attention_forward_bf16 && m->k->attention_backward_bf16;
}

/* The copy of tensor id starts at the same element index as its fp32 slice. */
static uint16_t *copy_of(const gpt2c_model *m, int id, int layer) {
    const gpt2c_param_info *pi = &m->info[id];
    return m->bf16_mem + pi->byte_offset / sizeof(float) + (pi->per_layer ? (size_t)layer * pi->rows * pi->cols : 0);
}

gpt2c_tensor gpt2c_model_weight(const gpt2c_model *m, int id, int layer) {
    if (!m->bf16_mem || !gpt2c_precision_has_copy(id)) return gpt2c_param_view(m, m->params_mem, id, layer);
    const gpt2c_param_info *pi = &m->info[id];
    /* aux: the weight's data-gradient panels, if kept (ops.h's bf16_panels) */
    gpt2c_tensor t = {GPT2C_FMT_BF16, pi->rows, pi->cols, copy_of(m, id, layer), NULL, gpt2c_model_bf16_panels(m, id, layer), 0};
    return t;
}

uint32_t *gpt2c_model_bf16_panels(const gpt2c_model *m, int id, int layer) {
    if (!m->panels_mem || !m->panels_width[id]) return NULL;
    const gpt2c_param_info *pi = &m->info[id];
    return m->panels_mem + m->panels_off[id] + (pi->per_layer ? (size_t)layer * pi->rows * pi->cols / 2 : 0);
}

/* tensor id's panels (every layer) from its row-major bf16 copy */
static void write_panels(gpt2c_model *m, int id) {
    const gpt2c_param_info *pi = &m->info[id];
    const int layers = pi->per_layer ? m->cfg.num_layers : 1;
    for (int l = 0; l < layers && m->panels_width[id]; l++)
        /* bytes: read the copy, write the panels */
        GPT2C_PROF_OP(m->prof, GPT2C_OP_BF16_COPY, -1, 0, 4.0 * (double)pi->rows * pi->cols,
                      m->k->bf16_panels(gpt2c_model_bf16_panels(m, id, l), copy_of(m, id, l), (int)pi->rows,
                                        (int)pi->cols, m->panels_width[id]));
}

int gpt2c_bf16_panels_wanted(void) {
    const char *e = getenv("GPT2C_BF16_PANELS");
    return !(e && strcmp(e, "0") == 0);
}

gpt2c_status gpt2c_model_alloc_bf16_panels(gpt2c_model *m) {
    if (!m->bf16_mem || m->fp32_released || m->panels_mem || !m->k->bf16_panel_width || !m->k->bf16_panels ||
        !gpt2c_bf16_panels_wanted())
        return GPT2C_OK;
    size_t words = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        const gpt2c_param_info *pi = &m->info[id];
        const int w = gpt2c_precision_has_copy(id) ? m->k->bf16_panel_width((int)pi->rows, (int)pi->cols) : 0;
        m->panels_width[id] = w;
        m->panels_off[id] = words;
        if (w) words += (pi->numel / 2 + 15) / 16 * 16; /* each tensor's on a 64-byte line */
    }
    if (!words) return GPT2C_OK;
    m->panels_mem = gpt2c_alloc_huge(words * sizeof(uint32_t), "bf16 weight panels (data-gradient GEMMs)");
    if (!m->panels_mem) return GPT2C_ERR_NOMEM;
    m->panels_bytes = words * sizeof(uint32_t);
    gpt2c_threads_use(m->threads);
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) write_panels(m, id);
    return GPT2C_OK;
}

void gpt2c_model_free_bf16_panels(gpt2c_model *m) {
    gpt2c_free(m->panels_mem);
    m->panels_mem = NULL;
    m->panels_bytes = 0;
    memset(m->panels_width, 0, sizeof m->panels_width);
}

/* fp32 -> bf16 (gpt2c_bf16_from_f32: branch-free, so the loop vectorises). */
static void to_bf16(uint16_t *restrict dst, const float *restrict src, size_t n) {
#pragma omp parallel for simd schedule(static) if (n >= 65536)
    for (size_t i = 0; i < n; i++) dst[i] = gpt2c_bf16_from_f32(src[i]);
}

uint16_t *gpt2c_model_bf16_copy(gpt2c_model *m, int id) {
    return m->bf16_mem && !m->fp32_released && gpt2c_precision_has_copy(id) ? copy_of(m, id, 0) : NULL;
}

void gpt2c_model_refresh_bf16(gpt2c_model *m, int all) {
    if (!m->bf16_mem || m->fp32_released) return;
    gpt2c_threads_use(m->threads);
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        if (!gpt2c_precision_has_copy(id) || (!all && !m->trainable[id])) continue;
        const size_t n = m->info[id].numel;
        /* bytes: read n fp32, write n bf16 */
        GPT2C_PROF_OP(m->prof, GPT2C_OP_BF16_COPY, -1, 0, 6.0 * (double)n,
                      to_bf16(copy_of(m, id, 0), gpt2c_param_slice(m, m->params_mem, id, 0), n));
        write_panels(m, id);
    }
    if (all) m->bf16_stale = 0;
}

/* bf16 needs the backend's own bf16 GEMMs: ref takes a bf16 weight too, but
 * by decoding its rows, with fp32 activations (no bf16 rounding of inputs) */
static gpt2c_status check_kernels(gpt2c_format p, const gpt2c_kernels *k) {
    const gpt2c_kernels *ref = gpt2c_kernels_ref();
    if (p == GPT2C_FMT_BF16 && (!GPT2C_KERNELS_TAKES(k, matmul_forward, GPT2C_FMT_BF16) ||
                                !GPT2C_KERNELS_TAKES(k, matmul_backward, GPT2C_FMT_BF16) ||
                                k->matmul_forward == ref->matmul_forward || k->matmul_backward == ref->matmul_backward))
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "bf16 needs a backend with bf16 GEMMs; the %s backend has none (cpu has)",
                          k->name);
    return GPT2C_OK;
}

gpt2c_status gpt2c_precision_check_backend(gpt2c_format p, const char *backend) {
    if (p != GPT2C_FMT_BF16) return GPT2C_OK;
    const gpt2c_kernels *k;
    GPT2C_TRY(gpt2c_kernels_get(backend, &k));
    return check_kernels(p, k);
}

gpt2c_status gpt2c_model_set_precision(gpt2c_model *m, gpt2c_format p) {
    if (p != GPT2C_FMT_F32 && p != GPT2C_FMT_BF16)
        return gpt2c_fail(GPT2C_ERR_ARG, "precision: '%s' is not a compute precision (fp32 or bf16)",
                          gpt2c_format_get(p) ? gpt2c_format_get(p)->name : "?");
    if (m->fp32_released)
        return gpt2c_fail(GPT2C_ERR_ARG, "precision: the model's fp32 weights were given back for bf16 inference");
    if (p == GPT2C_FMT_F32) {
        gpt2c_model_free_bf16_panels(m);
        gpt2c_free(m->bf16_mem);
        m->bf16_mem = NULL;
        return GPT2C_OK;
    }
    if (m->bf16_mem) return GPT2C_OK;
    GPT2C_TRY(check_kernels(p, m->k));
    if (m->qw)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                          "bf16: the model is quantized (%s); bf16 applies to fp32 weights",
                          gpt2c_format_get(m->qw->fmt)->name);
    m->bf16_mem = gpt2c_alloc_huge(m->slab_floats * sizeof(uint16_t), "bf16 weight copies");
    if (!m->bf16_mem) return GPT2C_ERR_NOMEM;
    gpt2c_model_refresh_bf16(m, 1);
    return GPT2C_OK;
}

void gpt2c_model_release_fp32_weights(gpt2c_model *m) {
    if (!m->bf16_mem || m->fp32_released) return;
    m->fp32_released = 1;
    gpt2c_model_free_bf16_panels(m); /* training's only */
#if defined(__linux__) && defined(MADV_DONTNEED)
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++) {
        if (!gpt2c_precision_has_copy(id)) continue;
        const uintptr_t a = (uintptr_t)gpt2c_param_slice(m, m->params_mem, id, 0);
        const uintptr_t lo = (a + page - 1) / page * page, hi = (a + m->info[id].numel * sizeof(float)) / page * page;
        if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED); /* reads as zeros from now on */
    }
#endif
}

size_t gpt2c_model_weight_bytes(const gpt2c_model *m) {
    size_t bytes = 0;
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS; id++)
        bytes += m->info[id].numel * (m->bf16_mem && gpt2c_precision_has_copy(id) ? 2 : 4);
    return bytes;
}
