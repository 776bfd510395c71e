/* Storage dtypes: the element types of checkpoint files (safetensors, llm.c
 * .bin) and their conversion to fp32.  These are file types; the formats a
 * tensor has in memory while the model runs (f32, bf16, q8, q4, nf4) are
 * gpt2c_format (format.h). */
#ifndef GPT2C_DTYPE_H
#define GPT2C_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
    GPT2C_DT_F32, GPT2C_DT_F16, GPT2C_DT_BF16, GPT2C_DT_F64, GPT2C_DT_I64, GPT2C_DT_I32,
    GPT2C_DT_I16, GPT2C_DT_I8, GPT2C_DT_U8, GPT2C_DT_U16, GPT2C_DT_BOOL
} gpt2c_dtype;

/* "F32", "BF16", ... as written in safetensors headers. */
const char *gpt2c_dtype_name(gpt2c_dtype dt);
/* Bytes per element. */
size_t gpt2c_dtype_size(gpt2c_dtype dt);
/* Converts n elements of dtype dt at src (any alignment) to fp32. */
void gpt2c_dtype_to_f32(gpt2c_dtype dt, const void *src, float *dst, size_t n);
/* fp32 -> bf16 with round-to-nearest-even (NaN stays NaN). */
uint16_t gpt2c_f32_to_bf16(float x);

#endif
