#include "kernels/kernels.h"

#include "gpt2c/cpu.h"

#include <string.h>

#include "kernels/ref/ref.h"
#include "kernels/ref/ref_infer.h"

static const gpt2c_kernels REF = {
    .name = "ref",
    .isa = "scalar",
    .encoder_forward = ref_encoder_forward,
    .encoder_backward = ref_encoder_backward,
    .layernorm_forward = ref_layernorm_forward,
    .layernorm_backward = ref_layernorm_backward,
    .residual_layernorm_forward = ref_residual_layernorm_forward,
    .matmul_forward = ref_matmul_forward,
    .matmul_backward = ref_matmul_backward,
    .attention_state_floats = ref_attention_state_floats,
    .attention_forward = ref_attention_forward,
    .attention_scratch_floats = ref_attention_scratch_floats,
    .attention_backward = ref_attention_backward,
    .gelu_forward = ref_gelu_forward,
    .gelu_backward = ref_gelu_backward,
    .residual_forward = ref_residual_forward,
    .softmax_xent_forward = ref_softmax_xent_forward,
    .softmax_xent_backward = ref_softmax_xent_backward,
    .sumsq = ref_sumsq,
    .adamw = ref_adamw,
    .zero = ref_zero,
    /* [fast-cpu] */
    .adamw_zero_grad = ref_adamw_zero_grad,
    /* [inference] */
    .matmul_infer_range = ref_matmul_infer_range,
    .kv_write = ref_kv_write,
    .attention_kv_range = ref_attention_kv_range,
};

const gpt2c_kernels *gpt2c_kernels_ref(void) { return &REF; }

/* Copies `b` and fills every NULL entry from ref.  The table is a struct of
 * pointers after the two name strings, so it can be walked as an array. */
typedef void (*fnptr)(void);
#define NFN ((sizeof(gpt2c_kernels) - offsetof(gpt2c_kernels, encoder_forward)) / sizeof(fnptr))

/* The [fast-cpu] and [inference] entries are optional for a device backend:
 * the model falls back to the plain ops, and the inference engine checks for
 * its entries and refuses a backend without (gpt2c_infer_create). */
#define OPTIONAL_FIRST ((offsetof(gpt2c_kernels, adamw_zero_grad) - offsetof(gpt2c_kernels, encoder_forward)) / sizeof(fnptr))
#define OPTIONAL_LAST ((offsetof(gpt2c_kernels, attention_kv_range) - offsetof(gpt2c_kernels, encoder_forward)) / sizeof(fnptr))

/* Index of the first NULL entry of a table, or -1 if every entry is set. */
static long first_null_entry(const gpt2c_kernels *b) {
    const fnptr *e = (const fnptr *)((const char *)b + offsetof(gpt2c_kernels, encoder_forward));
    for (size_t i = 0; i < NFN; i++)
        if (!e[i] && !(i >= OPTIONAL_FIRST && i <= OPTIONAL_LAST)) return (long)i;
    return -1;
}

long gpt2c_kernels_first_null(const gpt2c_kernels *b) { return first_null_entry(b); }

static void fill_from_ref(gpt2c_kernels *dst, const gpt2c_kernels *b) {
    *dst = *b;
    const size_t nfn = NFN;
    fnptr *d = (fnptr *)((char *)dst + offsetof(gpt2c_kernels, encoder_forward));
    const fnptr *r = (const fnptr *)((const char *)&REF + offsetof(gpt2c_kernels, encoder_forward));
    for (size_t i = 0; i < nfn; i++)
        if (!d[i]) d[i] = r[i];
    /* the attention state/scratch sizes must come from the same backend as the kernels */
    if (!b->attention_forward || !b->attention_backward) {
        dst->attention_state_floats = REF.attention_state_floats;
        dst->attention_scratch_floats = REF.attention_scratch_floats;
        dst->attention_forward = REF.attention_forward;
        dst->attention_backward = REF.attention_backward;
    }
}

#ifndef GPT2C_HAVE_BLAS
const gpt2c_kernels *gpt2c_kernels_blas(void);
const gpt2c_kernels *gpt2c_kernels_blas(void) { return NULL; }
#endif
#ifndef GPT2C_HAVE_CUDA
const gpt2c_kernels *gpt2c_kernels_cuda(void);
const gpt2c_kernels *gpt2c_kernels_cuda(void) { return NULL; }
#endif
const gpt2c_kernels *gpt2c_kernels_blas(void);
const gpt2c_kernels *gpt2c_kernels_cuda(void);

typedef struct {
    const char *name;
    const gpt2c_kernels *(*get)(void);
    const char *why_missing;
} backend_entry;

static const backend_entry BACKENDS[] = {
    {"ref", gpt2c_kernels_ref, ""},
    {"cpu", gpt2c_kernels_cpu, ""},
    {"blas", gpt2c_kernels_blas, NULL}, /* why: gpt2c_blas_describe() */
    {"cuda", gpt2c_kernels_cuda, "built without CUDA (nvcc not found at configure time, or -DGPT2C_CUDA=OFF)"},
};
#define NBACKENDS (sizeof BACKENDS / sizeof BACKENDS[0])

gpt2c_status gpt2c_kernels_get(const char *name, const gpt2c_kernels **out) {
    static gpt2c_kernels filled[NBACKENDS];
    static int ready[NBACKENDS];
    for (size_t i = 0; i < NBACKENDS; i++) {
        if (strcmp(name, BACKENDS[i].name) != 0) continue;
        const gpt2c_kernels *b = BACKENDS[i].get();
        if (!b)
            return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend '%s' is not available: %s", name,
                              BACKENDS[i].why_missing ? BACKENDS[i].why_missing : gpt2c_blas_describe());
        if (b->dev_alloc) {
            /* device backend: complete on its own (ref would touch device
             * pointers from the host), and the device must answer */
            long hole = first_null_entry(b);
            if (hole >= 0)
                return gpt2c_fail(GPT2C_ERR_UNSUPPORTED,
                                  "backend '%s': op table entry #%ld is not implemented for the device", name, hole);
            GPT2C_TRY(b->device_init());
            *out = b;
            return GPT2C_OK;
        }
        if (!ready[i]) {
            if (strcmp(name, "cpu") == 0) {
                gpt2c_kernels cpu = *b;
                gpt2c_kernels_cpu_infer_fill(&cpu);
                fill_from_ref(&filled[i], &cpu);
            } else {
                fill_from_ref(&filled[i], b);
            }
            ready[i] = 1;
        }
        *out = &filled[i];
        return GPT2C_OK;
    }
    return gpt2c_fail(GPT2C_ERR_ARG, "--backend: unknown backend '%s' (available: %s)", name, gpt2c_kernels_available());
}

const char *gpt2c_kernels_available(void) {
    static char buf[64];
    buf[0] = 0;
    for (size_t i = 0; i < NBACKENDS; i++)
        if (BACKENDS[i].get()) {
            if (buf[0]) strcat(buf, ",");
            strcat(buf, BACKENDS[i].name);
        }
    return buf;
}
