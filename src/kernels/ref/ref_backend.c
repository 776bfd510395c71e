/* The ref backend's table: every compute op of ops.h as ref_<name>. */
#include "kernels/backends.h"
#include "kernels/ref/ref.h"

static const gpt2c_kernels REF = {
    .name = "ref",
    .isa = "scalar",
    /* ref takes every format: it decodes each weight row (gpt2c_tensor_row_f32) */
    .formats =
        {
#define REF_FORMATS(name) .name = GPT2C_FMT_BIT(GPT2C_FMT_COUNT) - 1u,
            GPT2C_TYPED_OPS(REF_FORMATS)
#undef REF_FORMATS
        },
#define REF_ENTRY(ret, name, params, args) .name = gpt2c_ref_##name,
    GPT2C_OPS_COMPUTE(REF_ENTRY)
#undef REF_ENTRY
};

const gpt2c_kernels *gpt2c_kernels_ref(void) { return &REF; }

GPT2C_BACKEND_REGISTER(ref, gpt2c_kernels_ref, gpt2c_backend_always)
