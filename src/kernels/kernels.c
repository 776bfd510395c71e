/* The registry: looks backends up in backends.h's list, fills a host
 * backend's missing entries from ref, checks that a device backend is
 * complete.  It names no backend: each registers itself (backends.h). */
#include "kernels/kernels.h"

#include <string.h>

#include "kernels/backends.h"

static const gpt2c_backend *(*const BACKENDS[])(void) = {
#define BACKEND_ROW(n) gpt2c_backend_##n,
    GPT2C_BACKEND_LIST(BACKEND_ROW)
#undef BACKEND_ROW
};
#define NBACKENDS (sizeof BACKENDS / sizeof BACKENDS[0])

/* the names of the entries a device backend must fill, in table order */
static const char *const DEVICE_REQUIRED_NAMES[] = {
#define ENTRY_NAME(ret, name, params, args) #name,
    GPT2C_OPS_DEVICE_REQUIRED(ENTRY_NAME)
#undef ENTRY_NAME
};

long gpt2c_kernels_first_null(const gpt2c_kernels *b) {
    long i = 0;
#define CHECK_ENTRY(ret, name, params, args)                                                                           \
    if (!b->name) return i;                                                                                            \
    i++;
    GPT2C_OPS_DEVICE_REQUIRED(CHECK_ENTRY)
#undef CHECK_ENTRY
    return -1;
}

/* Copies `b` and fills every NULL compute entry from ref. */
static void fill_from_ref(gpt2c_kernels *dst, const gpt2c_kernels *b) {
    const gpt2c_kernels *ref = gpt2c_kernels_ref();
    *dst = *b;
#define FILL_ENTRY(ret, name, params, args)                                                                            \
    if (!dst->name) dst->name = ref->name;
    GPT2C_OPS_COMPUTE(FILL_ENTRY)
#undef FILL_ENTRY
    /* an inherited typed op takes what ref's takes */
#define FILL_FORMATS(name)                                                                                             \
    if (!b->name) dst->formats.name = ref->formats.name;
    GPT2C_TYPED_OPS(FILL_FORMATS)
#undef FILL_FORMATS
    /* ... and the input formats of ref's inference matmul */
    if (!b->matmul_infer_range) dst->infer_bf16_input = ref->infer_bf16_input, dst->infer_prepare = ref->infer_prepare;
    /* the attention state/scratch sizes must come from the same backend as the kernels */
    if (!b->attention_forward || !b->attention_backward) {
        dst->attention_state_floats = ref->attention_state_floats;
        dst->attention_scratch_floats = ref->attention_scratch_floats;
        dst->attention_forward = ref->attention_forward;
        dst->attention_backward = ref->attention_backward;
    }
}

gpt2c_status gpt2c_kernels_get(const char *name, const gpt2c_kernels **out) {
    static gpt2c_kernels filled[NBACKENDS];
    static int ready[NBACKENDS];
    for (size_t i = 0; i < NBACKENDS; i++) {
        const gpt2c_backend *be = BACKENDS[i]();
        if (strcmp(name, be->name) != 0) continue;
        const gpt2c_kernels *b = be->table();
        if (!b) return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend '%s' is not available: %s", name, be->why_unavailable());
        if (b->dev_alloc) {
            /* device backend: complete on its own (ref would touch device
             * pointers from the host), and the device must answer */
            long hole = gpt2c_kernels_first_null(b);
            if (hole >= 0)
                return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "backend '%s': op table entry '%s' is not implemented for the device",
                                  name, DEVICE_REQUIRED_NAMES[hole]);
            GPT2C_TRY(b->device_init());
            *out = b;
            return GPT2C_OK;
        }
        if (!ready[i]) {
            fill_from_ref(&filled[i], b);
            ready[i] = 1;
        }
        *out = &filled[i];
        return GPT2C_OK;
    }
    return gpt2c_fail(GPT2C_ERR_ARG, "unknown backend '%s' (available: %s)", name, gpt2c_kernels_available());
}

int gpt2c_kernels_known(const char *name) {
    for (size_t i = 0; i < NBACKENDS; i++)
        if (strcmp(name, BACKENDS[i]()->name) == 0) return 1;
    return 0;
}

const char *gpt2c_kernels_available(void) {
    static char buf[128];
    buf[0] = 0;
    for (size_t i = 0; i < NBACKENDS; i++) {
        const gpt2c_backend *be = BACKENDS[i]();
        if (!be->table()) continue;
        if (buf[0]) strcat(buf, ",");
        strcat(buf, be->name);
    }
    return buf;
}
