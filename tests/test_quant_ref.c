/* q8 / q4 / nf4 packing against references nobody here wrote
 * (tests/fixtures/quant/quant_ref.bin, written by tools/reference/quant_fixtures.py
 * from llama.cpp's gguf-py quantizers and bitsandbytes' C library):
 * codes and scales bit for bit, dequantized values within 1 ulp (they come out
 * exact), nf4 double quantization codes and scales bit for bit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/quant.h"
#include "testutil.h"

static unsigned char *buf;
static size_t len, at;

static const void *take(size_t n) {
    if (at + n > len) {
        fprintf(stderr, "fixture truncated at byte %zu (want %zu more)\n", at, n);
        exit(1);
    }
    const void *p = buf + at;
    at += n;
    return p;
}

static uint32_t take_u32(void) {
    uint32_t v;
    memcpy(&v, take(4), 4);
    return v;
}

/* a float array copied out (the file's floats may be unaligned) */
static float *take_f32(size_t n) {
    float *p = malloc(n * sizeof(float) + 1);
    memcpy(p, take(n * sizeof(float)), n * sizeof(float));
    return p;
}

static int same_bits(const float *a, const float *b, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4)) {
            fprintf(stderr, "%s[%zu]: %.9g vs reference %.9g\n", what, i, a[i], b[i]);
            return 0;
        }
    return 1;
}

/* distance in units in the last place (same sign assumed, fine for a 1-ulp check) */
static int within_ulp(const float *a, const float *b, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        int32_t x, y;
        memcpy(&x, &a[i], 4);
        memcpy(&y, &b[i], 4);
        if (a[i] != b[i] && abs(x - y) > 1) {
            fprintf(stderr, "%s[%zu]: %.9g vs reference %.9g\n", what, i, a[i], b[i]);
            return 0;
        }
    }
    return 1;
}

int main(void) {
    char path[1024];
    snprintf(path, sizeof path, "%s/quant/quant_ref.bin", GPT2C_FIXTURES);
    FILE *f = fopen(path, "rb");
    if (!f) tu_skip("quant fixture missing");
    fseek(f, 0, SEEK_END);
    len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(len);
    CHECK(fread(buf, 1, len, f) == len);
    fclose(f);
    CHECK(memcmp(take(4), "GQF1", 4) == 0);
    const int rows = (int)take_u32(), cols = (int)take_u32();
    const size_t n = (size_t)rows * cols;
    float *W = take_f32(n);
    float *deq = malloc(n * sizeof(float));

    /* q8 */
    {
        const int8_t *ref_codes = take(n);
        float *ref_d = take_f32(n / 32);
        int8_t *codes = malloc(n);
        float *d = malloc(n / 32 * sizeof(float));
        gpt2c_quant_pack(GPT2C_FMT_Q8, 0, W, rows, cols, codes, d);
        CHECK_MSG(memcmp(codes, ref_codes, n) == 0, "q8 codes differ from gguf's Q8_0");
        CHECK(same_bits(d, ref_d, n / 32, "q8 scale"));
        gpt2c_tensor t = {GPT2C_FMT_Q8, rows, cols, codes, d, NULL, 0};
        gpt2c_quant_unpack(&t, deq);
        float *want = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++) want[i] = (float)ref_codes[i] * ref_d[i / 32];
        CHECK(within_ulp(deq, want, n, "q8 dequantized"));
        free(want), free(codes), free(d), free(ref_d);
    }
    /* q4 */
    {
        const uint8_t *ref_codes = take(n / 2);
        float *ref_d = take_f32(n / 32);
        uint8_t *codes = malloc(n / 2);
        float *d = malloc(n / 32 * sizeof(float));
        gpt2c_quant_pack(GPT2C_FMT_Q4, 0, W, rows, cols, codes, d);
        CHECK_MSG(memcmp(codes, ref_codes, n / 2) == 0, "q4 codes differ from gguf's Q4_0");
        CHECK(same_bits(d, ref_d, n / 32, "q4 scale"));
        gpt2c_tensor t = {GPT2C_FMT_Q4, rows, cols, codes, d, NULL, 0};
        gpt2c_quant_unpack(&t, deq);
        float *want = malloc(n * sizeof(float));
        for (size_t g = 0; g < n; g += 32)
            for (int j = 0; j < 16; j++) {
                want[g + j] = (float)((ref_codes[g / 2 + j] & 15) - 8) * ref_d[g / 32];
                want[g + j + 16] = (float)((ref_codes[g / 2 + j] >> 4) - 8) * ref_d[g / 32];
            }
        CHECK(within_ulp(deq, want, n, "q4 dequantized"));
        free(want), free(codes), free(d), free(ref_d);
    }
    /* nf4 */
    {
        const uint8_t *ref_codes = take(n / 2);
        float *ref_absmax = take_f32(n / 64);
        float *ref_deq = take_f32(n);
        uint8_t *codes = malloc(n / 2);
        float *absmax = malloc(n / 64 * sizeof(float));
        gpt2c_quant_pack(GPT2C_FMT_NF4, 0, W, rows, cols, codes, absmax);
        CHECK_MSG(memcmp(codes, ref_codes, n / 2) == 0, "nf4 codes differ from bitsandbytes'");
        CHECK(same_bits(absmax, ref_absmax, n / 64, "nf4 absmax"));
        gpt2c_tensor t = {GPT2C_FMT_NF4, rows, cols, codes, absmax, NULL, 0};
        gpt2c_quant_unpack(&t, deq);
        CHECK(within_ulp(deq, ref_deq, n, "nf4 dequantized (bitsandbytes C)"));
        free(codes), free(absmax), free(ref_absmax), free(ref_deq);
    }
    /* nf4 double quantization */
    {
        const size_t m = take_u32(), nblk = (m + 255) / 256;
        float *am = take_f32(m), *ref_off = take_f32(1);
        const uint8_t *ref_codes8 = take(m);
        float *ref_absmax2 = take_f32(nblk), *ref_scales = take_f32(m), *ref_map = take_f32(256);
        CHECK(same_bits(gpt2c_dynamic_map(), ref_map, 256, "dynamic map"));
        uint8_t *codes8 = malloc(m);
        float *absmax2 = malloc(nblk * sizeof(float)), *scales = malloc(m * sizeof(float)), off;
        gpt2c_nf4_dq_pack(am, m, codes8, absmax2, &off);
        CHECK(same_bits(&off, ref_off, 1, "dq offset"));
        CHECK(same_bits(absmax2, ref_absmax2, nblk, "dq absmax2"));
        size_t bad = 0;
        for (size_t i = 0; i < m; i++) bad += codes8[i] != ref_codes8[i];
        CHECK_MSG(bad == 0, "%zu of %zu double-quant codes differ from bitsandbytes'", bad, m);
        gpt2c_nf4_dq_unpack(codes8, absmax2, off, m, scales);
        CHECK(within_ulp(scales, ref_scales, m, "dq scales"));
        free(am), free(ref_off), free(ref_absmax2), free(ref_scales), free(ref_map), free(codes8), free(absmax2),
            free(scales);
    }
    CHECK_MSG(at == len, "fixture has %zu unread bytes", len - at);
    free(W), free(deq), free(buf);
    return tu_finish("test_quant_ref");
}
