/* The ref backend's functions, ref_<op> for every compute op of ops.h, for
 * ref_backend.c to put in the table and for other backends that want to call
 * a ref op directly on a path they do not accelerate. */
#ifndef GPT2C_REF_H
#define GPT2C_REF_H

#include "kernels/kernels.h"

#define GPT2C_REF_DECLARE(ret, name, params, args) ret gpt2c_ref_##name params;
GPT2C_OPS_COMPUTE(GPT2C_REF_DECLARE)
#undef GPT2C_REF_DECLARE

/* Weight view w as an fp32 (rows, cols) matrix: w's own data for f32, else
 * a decoded copy (gpt2c_tensor_row_f32) that *owned points to, for the
 * caller to free.  NULL when the format has no decoder yet or memory runs
 * out: the op then writes NaN to its outputs (ops cannot fail). */
const float *gpt2c_ref_weight_f32(const gpt2c_tensor *w, float **owned);

#endif
