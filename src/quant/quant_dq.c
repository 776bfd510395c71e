/* nf4 double quantization: bitsandbytes' 8-bit blockwise quantization of the
 * absmax values (compress_statistics=True), see gpt2c/quant.h. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>

#include "gpt2c/quant.h"

static float dynamic[256];
static pthread_once_t dynamic_once = PTHREAD_ONCE_INIT;

/* torch.linspace(start, end, steps) in fp32, element idx (its scalar formula:
 * the first half counted from start, the second from end). */
static float linspace_f32(float start, float end, int steps, int idx) {
    const float step = (end - start) / (float)(steps - 1);
    return idx < steps / 2 ? start + step * (float)idx : end - step * (float)(steps - idx - 1);
}

static int cmp_float(const void *a, const void *b) {
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8): for
 * exponent i = 0..6, 2^i fraction values (midpoints of linspace(0.1, 1,
 * 2^i + 1)) scaled by 10^(i-6), with both signs; then 0 and 1; sorted. */
static void build_dynamic(void) {
    int n = 0;
    for (int i = 0; i < 7; i++) {
        const int items = (1 << i) + 1;
        const float scale = (float)pow(10.0, i - 6);
        for (int k = 0; k + 1 < items; k++) {
            const float mean = (linspace_f32(0.1f, 1.0f, items, k) + linspace_f32(0.1f, 1.0f, items, k + 1)) / 2.0f;
            dynamic[n++] = scale * mean;
            dynamic[n++] = -scale * mean;
        }
    }
    dynamic[n++] = 0.0f;
    dynamic[n++] = 1.0f;
    qsort(dynamic, 256, sizeof(float), cmp_float);
}

const float *gpt2c_dynamic_map(void) {
    pthread_once(&dynamic_once, build_dynamic);
    return dynamic;
}

/* bitsandbytes' CPU blockwise quantizer (libbitsandbytes_cpu, 0.50) does not
 * search the map per value: it builds a 65536-entry table over a uniform grid
 * of [-1, 1] (entry i: the number of fp32 midpoints (c[k] + c[k+1]) * 0.5
 * below 2i/65535 - 1) and rounds each normalised value to the nearest grid
 * point.  So the code is the grid point's nearest entry, which for values
 * close to a midpoint can be the second nearest: reproduced here exactly. */
static uint8_t lut[65536];
static pthread_once_t lut_once = PTHREAD_ONCE_INIT;

static void build_lut(void) {
    const float *code = gpt2c_dynamic_map();
    float mid[255];
    for (int k = 0; k < 255; k++) mid[k] = (code[k] + code[k + 1]) * 0.5f;
    int idx = 0;
    for (int i = 0; i < 65536; i++) {
        const float x = (float)(2 * i) / 65535.0f - 1.0f;
        while (idx < 255 && x > mid[idx]) idx++;
        lut[i] = (uint8_t)idx;
    }
}

/* v already multiplied by 1/absmax */
static uint8_t dynamic_code(float v) {
    v = v < -1.0f ? -1.0f : v > 1.0f ? 1.0f : v;
    const float u = (v + 1.0f) * 0.5f;
    return lut[(int)fmaf(u, 65535.0f, 0.5f) & 0xffff];
}

void gpt2c_nf4_dq_pack(const float *absmax, size_t n, uint8_t *codes8, float *absmax2, float *offset) {
    pthread_once(&lut_once, build_lut);
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) sum += absmax[i];
    const float off = n ? (float)(sum / (double)n) : 0.0f;
    *offset = off;
    for (size_t b0 = 0, blk = 0; b0 < n; b0 += GPT2C_NF4_DQ_BLOCK, blk++) {
        const size_t b1 = b0 + GPT2C_NF4_DQ_BLOCK < n ? b0 + GPT2C_NF4_DQ_BLOCK : n;
        float amax = 0.0f;
        for (size_t i = b0; i < b1; i++) amax = fmaxf(amax, fabsf(absmax[i] - off));
        absmax2[blk] = amax;
        const float inv = 1.0f / amax;
        for (size_t i = b0; i < b1; i++) codes8[i] = amax == 0.0f ? 0 : dynamic_code((absmax[i] - off) * inv);
    }
}

void gpt2c_nf4_dq_unpack(const uint8_t *codes8, const float *absmax2, float offset, size_t n, float *absmax) {
    const float *code = gpt2c_dynamic_map();
    for (size_t i = 0; i < n; i++) {
        const float scaled = code[codes8[i]] * absmax2[i / GPT2C_NF4_DQ_BLOCK]; /* then + offset: two roundings */
        absmax[i] = scaled + offset;
    }
}
