/* Element types of checkpoints and their conversion to fp32. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "gpt2c/dtype.h"

const char *gpt2c_dtype_name(gpt2c_dtype dt) {
    static const char *names[] = {"F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "U16", "BOOL"};
    return (unsigned)dt < sizeof names / sizeof names[0] ? names[dt] : "?";
}

size_t gpt2c_dtype_size(gpt2c_dtype dt) {
    switch (dt) {
    case GPT2C_DT_F64:
    case GPT2C_DT_I64: return 8;
    case GPT2C_DT_F32:
    case GPT2C_DT_I32: return 4;
    case GPT2C_DT_F16:
    case GPT2C_DT_BF16:
    case GPT2C_DT_I16:
    case GPT2C_DT_U16: return 2;
    case GPT2C_DT_I8:
    case GPT2C_DT_U8:
    case GPT2C_DT_BOOL: return 1;
    }
    return 0;
}

/* IEEE half: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); /* inf / NaN */
    } else if (exp != 0) {
        bits = sign | ((exp + 112) << 23) | (man << 13); /* rebias 15 -> 127 */
    } else {
        /* zero or subnormal: man * 2^-24 exactly */
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t gpt2c_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    /* round to nearest even: add 0x7fff plus the lowest kept bit, then truncate */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

void gpt2c_dtype_to_f32(gpt2c_dtype dt, const void *src, float *dst, size_t n) {
    const unsigned char *s = src;
    switch (dt) {
    case GPT2C_DT_F32: memcpy(dst, s, n * 4); return;
    case GPT2C_DT_BF16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            uint32_t bits = (uint32_t)h << 16;
            memcpy(&dst[i], &bits, 4);
        }
        return;
    case GPT2C_DT_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, s + 2 * i, 2);
            dst[i] = f16_to_f32(h);
        }
        return;
#define CONVERT(T)                                                                                                   \
    for (size_t i = 0; i < n; i++) {                                                                                 \
        T v;                                                                                                         \
        memcpy(&v, s + sizeof(T) * i, sizeof(T));                                                                    \
        dst[i] = (float)v;                                                                                           \
    }                                                                                                                \
    return;
    case GPT2C_DT_F64:
        for (size_t i = 0; i < n; i++) {
            double v;
            memcpy(&v, s + 8 * i, 8);
            /* out-of-range double -> float is undefined in C: saturate to +-inf */
            dst[i] = v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
        }
        return;
    case GPT2C_DT_I64: CONVERT(int64_t)
    case GPT2C_DT_I32: CONVERT(int32_t)
    case GPT2C_DT_I16: CONVERT(int16_t)
    case GPT2C_DT_U16: CONVERT(uint16_t)
    case GPT2C_DT_I8: CONVERT(int8_t)
    case GPT2C_DT_U8: CONVERT(uint8_t)
#undef CONVERT
    case GPT2C_DT_BOOL:
        for (size_t i = 0; i < n; i++) dst[i] = s[i] ? 1.0f : 0.0f;
        return;
    }
}
