/* Packing and unpacking of q8 / q4 / nf4 blocks (definitions in gpt2c/quant.h). */
#include <math.h>
#include <string.h>

#include "gpt2c/quant.h"

/* bitsandbytes' get_4bit_type("nf4"), as fp32. */
const float gpt2c_nf4_code[16] = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, -0.28444138169288635f,
    -0.18477343022823334f, -0.09105003625154495f, 0.0f, 0.07958029955625534f, 0.16093020141124725f,
    0.24611230194568634f, 0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f,
    1.0f,
};

/* round(127 * gpt2c_nf4_code[i]) (nearest; no ties occur): the nf4 values as the int8 decode kernel takes them */
const int8_t gpt2c_nf4_code_i8[16] = {-127, -88, -67, -50, -36, -23, -12, 0, 10, 20, 31, 43, 56, 71, 92, 127};

int gpt2c_quant_block(gpt2c_format f, int block) {
    if (block > 0) return block;
    const gpt2c_format_info *fi = gpt2c_format_get(f);
    return fi ? (int)fi->block : 1;
}

gpt2c_status gpt2c_quant_check(gpt2c_format f, int64_t rows, int64_t cols, int block, const char *what) {
    if (!gpt2c_format_is_quantized(f))
        return gpt2c_fail(GPT2C_ERR_ARG, "%s: format %d is not a block-quantized format (q8, q4, nf4)", what, (int)f);
    const int base = (int)gpt2c_format_get(f)->block, b = gpt2c_quant_block(f, block);
    const char *name = gpt2c_format_get(f)->name;
    if (b < base || b % base || b > (1 << 20))
        return gpt2c_fail(GPT2C_ERR_ARG, "block %d: %s needs a block that is a positive multiple of %d (%s)", b, name,
                          base, what);
    if (rows <= 0 || cols <= 0) return gpt2c_fail(GPT2C_ERR_ARG, "%s: empty shape (%lld, %lld)", what,
                                                  (long long)rows, (long long)cols);
    if (cols % b)
        return gpt2c_fail(GPT2C_ERR_ARG, "%s: block %d does not divide the row length %lld (format %s)", what, b,
                          (long long)cols, name);
    return GPT2C_OK;
}

size_t gpt2c_quant_code_bytes(gpt2c_format f, int64_t rows, int64_t cols, int block) {
    (void)block;
    return gpt2c_format_bytes(f, (size_t)rows * (size_t)cols);
}

size_t gpt2c_quant_nscales(gpt2c_format f, int64_t rows, int64_t cols, int block) {
    return (size_t)rows * (size_t)cols / (size_t)gpt2c_quant_block(f, block);
}

static void pack_q8(const float *x, int n, int8_t *q, float *d_out) {
    float amax = 0.0f;
    for (int i = 0; i < n; i++) amax = fmaxf(amax, fabsf(x[i]));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < n; i++) q[i] = (int8_t)roundf(x[i] * id);
    *d_out = d;
}

/* n elements (a multiple of 32) into n/2 bytes, groups of 32 as in quant.h. */
static void pack_q4(const float *x, int n, uint8_t *q, float *d_out) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++)
        if (amax < fabsf(x[i])) {
            amax = fabsf(x[i]);
            max = x[i];
        }
    const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int g = 0; g < n; g += 32)
        for (int j = 0; j < 16; j++) {
            const int lo = (int)(x[g + j] * id + 8.5f), hi = (int)(x[g + j + 16] * id + 8.5f);
            q[(g >> 1) + j] = (uint8_t)((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
        }
    *d_out = d;
}

/* bitsandbytes: bucketize(clamp(x * (1/absmax), -1, 1), midpoints) -- the
 * number of fp32 midpoints strictly below the value. */
static int nf4_code(float v) {
    int q = 0;
    for (int i = 0; i < 15; i++) {
        const float mid = (gpt2c_nf4_code[i] + gpt2c_nf4_code[i + 1]) / 2.0f;
        q += mid < v;
    }
    return q;
}

static void pack_nf4(const float *x, int n, uint8_t *q, float *absmax_out) {
    float amax = 0.0f;
    for (int i = 0; i < n; i++) amax = fmaxf(amax, fabsf(x[i]));
    const float inv = 1.0f / fmaxf(amax, 1e-38f);
    for (int i = 0; i < n; i += 2) {
        const float a = fminf(fmaxf(x[i] * inv, -1.0f), 1.0f), b = fminf(fmaxf(x[i + 1] * inv, -1.0f), 1.0f);
        q[i >> 1] = (uint8_t)(nf4_code(a) << 4 | nf4_code(b));
    }
    *absmax_out = amax;
}

void gpt2c_quant_pack(gpt2c_format f, int block, const float *w, int64_t rows, int64_t cols, void *codes,
                      float *scales) {
    const int b = gpt2c_quant_block(f, block);
    const size_t n = (size_t)rows * (size_t)cols, nb = n / (size_t)b;
    for (size_t k = 0; k < nb; k++) {
        const float *x = w + k * b;
        switch (f) {
        case GPT2C_FMT_Q8: pack_q8(x, b, (int8_t *)codes + k * b, &scales[k]); break;
        case GPT2C_FMT_Q4: pack_q4(x, b, (uint8_t *)codes + k * b / 2, &scales[k]); break;
        case GPT2C_FMT_NF4: pack_nf4(x, b, (uint8_t *)codes + k * b / 2, &scales[k]); break;
        default: break;
        }
    }
}

void gpt2c_quant_unpack_row(const gpt2c_tensor *t, int64_t r, float *out) {
    const int b = gpt2c_quant_block(t->fmt, t->block);
    const int64_t C = t->cols;
    const float *d = t->scales + (size_t)r * (size_t)(C / b);
    switch (t->fmt) {
    case GPT2C_FMT_Q8: {
        const int8_t *q = (const int8_t *)t->data + (size_t)r * C;
        for (int64_t i = 0; i < C; i++) out[i] = (float)q[i] * d[i / b];
        break;
    }
    case GPT2C_FMT_Q4: {
        const uint8_t *q = (const uint8_t *)t->data + (size_t)r * C / 2;
        for (int64_t g = 0; g < C; g += 32)
            for (int j = 0; j < 16; j++) {
                const uint8_t byte = q[g / 2 + j];
                out[g + j] = (float)((byte & 15) - 8) * d[(g + j) / b];
                out[g + j + 16] = (float)((byte >> 4) - 8) * d[(g + j + 16) / b];
            }
        break;
    }
    case GPT2C_FMT_NF4: {
        const uint8_t *q = (const uint8_t *)t->data + (size_t)r * C / 2;
        for (int64_t i = 0; i < C; i += 2) {
            out[i] = gpt2c_nf4_code[q[i / 2] >> 4] * d[i / b];
            out[i + 1] = gpt2c_nf4_code[q[i / 2] & 15] * d[(i + 1) / b];
        }
        break;
    }
    case GPT2C_FMT_F32: memcpy(out, (const float *)t->data + (size_t)r * C, sizeof(float) * (size_t)C); break;
    default: break;
    }
}

void gpt2c_quant_unpack(const gpt2c_tensor *t, float *out) {
    for (int64_t r = 0; r < t->rows; r++) gpt2c_quant_unpack_row(t, r, out + (size_t)r * (size_t)t->cols);
}
