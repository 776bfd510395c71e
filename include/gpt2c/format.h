/* Tensor formats the model computes with, and the typed view the op table takes.
 *
 * One list for every precision and weight format (fp32, bf16, and the block-
 * quantized q8 / q4 / nf4), so a new format is a row here plus its kernels,
 * not new signatures.  Storage dtypes of checkpoint files (F16, I64, ...) stay
 * in io.h's gpt2c_dtype; these are the formats a tensor has in memory while
 * the model runs.
 *
 * Block formats quantize a weight (OC, IC) row by row along IC, in blocks of
 * `block` consecutive elements; each block has one scale (the block format's
 * own codes live in `data`, the scales in `scales`):
 *   q8   int8 codes, scale = absmax / 127           (llama.cpp Q8_0-like, block 32)
 *   q4   4-bit signed codes [-8, 7], scale = absmax / -8 or /7 as the kernel defines (block 32)
 *   nf4  QLoRA NormalFloat4 codes, scale = absmax    (bitsandbytes, block 64),
 *        two codes per byte, first value in the high nibble; with double
 *        quantization the fp32 scales are themselves 8-bit codes (see src/quant).
 *   The exact definitions (rounding, nibble order, double quantization) are in
 *   gpt2c/quant.h; q4 there is llama.cpp's Q4_0 (d = signed max / -8).
 *
 * X-macro: GPT2C_FORMAT_LIST(X) expands X(ENUM, name, block, block_bytes)
 *   block       elements per block (1 for plain element formats)
 *   block_bytes bytes of one block's codes (not counting its scale) */
#ifndef GPT2C_FORMAT_H
#define GPT2C_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define GPT2C_FORMAT_LIST(X)                                                                                         \
    X(F32, "f32", 1, 4)                                                                                              \
    X(BF16, "bf16", 1, 2)                                                                                            \
    X(Q8, "q8", 32, 32)                                                                                              \
    X(Q4, "q4", 32, 16)                                                                                              \
    X(NF4, "nf4", 64, 32)

typedef enum {
#define GPT2C_FORMAT_ENUM(e, name, block, bytes) GPT2C_FMT_##e,
    GPT2C_FORMAT_LIST(GPT2C_FORMAT_ENUM)
#undef GPT2C_FORMAT_ENUM
        GPT2C_FMT_COUNT
} gpt2c_format;

typedef struct gpt2c_format_info {
    const char *name;     /* "f32", "bf16", "q8", "q4", "nf4" */
    uint32_t block;       /* elements per block (1: an element format) */
    uint32_t block_bytes; /* bytes of one block's codes */
} gpt2c_format_info;

/* Static description of a format (NULL for an out-of-range value). */
const gpt2c_format_info *gpt2c_format_get(gpt2c_format f);
/* Parses "f32" / "fp32", "bf16", "q8", "q4", "nf4"; returns 0 on success, -1 if unknown. */
int gpt2c_format_parse(const char *s, gpt2c_format *out);
/* 1 for block-quantized formats (q8, q4, nf4). */
int gpt2c_format_is_quantized(gpt2c_format f);
/* Bytes of the codes of n elements (n a multiple of the block for block formats;
 * returns 0 if it is not, or on size_t overflow).  Scales are counted apart. */
size_t gpt2c_format_bytes(gpt2c_format f, size_t n);

/* A typed view of a 2-D tensor (rows, cols), row-major.  For a weight, rows =
 * out features, cols = in features; block formats block along cols.
 *   data    the elements (f32, bf16) or packed codes (q8, q4, nf4)
 *   scales  one fp32 per block for block formats, rows * cols / block of them,
 *           row-major (NULL for f32 / bf16).  A double-quantized nf4 tensor
 *           is expanded to fp32 scales when loaded, or carries its codes in
 *           `aux` (the quant code documents which).
 *   aux     format-specific extra data (NULL if none).
 *   block   elements per block of a block format; 0 = the format's default
 *           (gpt2c_quant_block in gpt2c/quant.h resolves it). */
typedef struct gpt2c_tensor {
    gpt2c_format fmt;
    int64_t rows, cols;
    void *data;
    float *scales;
    void *aux;
    int32_t block;
} gpt2c_tensor;

/* A view of fp32 data, the format of everything before bf16 / quantization. */
static inline gpt2c_tensor gpt2c_tensor_f32(float *data, int64_t rows, int64_t cols) {
    gpt2c_tensor t = {GPT2C_FMT_F32, rows, cols, data, NULL, NULL, 0};
    return t;
}

/* Decodes row r of t into dst (t->cols floats), whatever its format (block
 * formats through gpt2c_quant_unpack_row).  Returns 0, or -1 for r out of
 * range or an unknown format. */
int gpt2c_tensor_row_f32(const gpt2c_tensor *t, int64_t r, float *dst);

#endif
