/* The KV-cache writes of inference on AVX-512 (cpu_infer.c calls them when
 * the CPU has AVX-512F), one (sequence, head) at a time.
 *
 * Keys go to the cache transposed (row i holds channel i of every position),
 * while in qkv a token's channels are contiguous and tokens are 3C floats
 * apart: blocks of 16 tokens x 16 channels are transposed in registers and
 * stored as 16 runs of 16 positions.  Values are rows in both, copied.  A
 * bf16 cache rounds every value to nearest even with NaN kept quiet, lane by
 * lane as gpt2c_bf16_from_f32 does, so the bits are the ref's.
 *
 * The portable loop it replaces (one value at a time, the keys' walk down
 * qkv's columns, on one thread for a whole prefill) took 1.3 ms per layer of
 * a 512-token bf16 prefill on Zen 4: 16 ms of a ~280 ms prefill. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/cpu/bf16_split_avx512.h"
#include "kernels/cpu/cpu_infer.h"
#include "kernels/cpu/transpose16_avx512.h"

static inline __mmask16 lanes16(int k) {
    return k >= 16 ? (__mmask16)0xFFFF : k <= 0 ? (__mmask16)0 : (__mmask16)((1u << k) - 1);
}

/* n (<= 16) values of x to dst + i (elements of 4 or, bf16, 2 bytes) */
static inline void store_n(void *dst, size_t i, __m512 x, int n, int bf16) {
    if (bf16)
        _mm256_mask_storeu_epi16((uint16_t *)dst + i, lanes16(n), gpt2c_bf16x16(x));
    else
        _mm512_mask_storeu_ps((float *)dst + i, lanes16(n), x);
}

/* K[i*ctx + t] = src[t*lds + i] for t < Tq, i < hs */
static void write_keys(void *K, size_t ctx, const float *src, size_t lds, int Tq, int hs, int bf16) {
    if (Tq == 1) { /* decode: one value per channel row, nothing to transpose */
        for (int i = 0; i < hs; i++)
            if (bf16)
                ((uint16_t *)K)[(size_t)i * ctx] = gpt2c_bf16_from_f32(src[i]);
            else
                ((float *)K)[(size_t)i * ctx] = src[i];
        return;
    }
    float tr[16 * 16] __attribute__((aligned(64)));
    for (int t0 = 0; t0 < Tq; t0 += 16) {
        const int tn = Tq - t0 < 16 ? Tq - t0 : 16;
        for (int i0 = 0; i0 < hs; i0 += 16) {
            const int in = hs - i0 < 16 ? hs - i0 : 16;
            __m512 r[16];
            for (int j = 0; j < 16; j++)
                r[j] = j < tn ? _mm512_maskz_loadu_ps(lanes16(in), src + (size_t)(t0 + j) * lds + i0) : _mm512_setzero_ps();
            if (!bf16 && tn == 16 && in == 16) { /* straight into the cache rows */
                transpose16((float *)K + (size_t)i0 * ctx + t0, (long)ctx, r);
                continue;
            }
            transpose16(tr, 16, r); /* tr[e*16 + j] = channel i0 + e of token t0 + j */
            for (int e = 0; e < in; e++) store_n(K, (size_t)(i0 + e) * ctx + t0, _mm512_load_ps(tr + 16 * e), tn, bf16);
        }
    }
}

/* V[t*hs + i] = src[t*lds + i] */
static void write_values(void *V, const float *src, size_t lds, int Tq, int hs, int bf16) {
    for (int t = 0; t < Tq; t++) {
        const float *s = src + (size_t)t * lds;
        if (!bf16) {
            memcpy((float *)V + (size_t)t * hs, s, sizeof(float) * hs);
            continue;
        }
        for (int i = 0; i < hs; i += 16)
            store_n(V, (size_t)t * hs + i, _mm512_maskz_loadu_ps(lanes16(hs - i), s + i), hs - i, 1);
    }
}

void gpt2c_cpu_kv_write_avx512(void *kc, void *vc, const float *qkv, const int *pos, int B, int Tq, int ctx, int C,
                               int NH, int h0, int h1, int bf16) {
    const int hs = C / NH;
    const size_t esz = bf16 ? 2 : 4, lds = (size_t)3 * C;
    for (int b = 0; b < B; b++)
        for (int h = h0; h < h1; h++) {
            const size_t pair = (size_t)b * NH + h;
            const float *k = qkv + (size_t)b * Tq * lds + C + (size_t)h * hs, *v = k + C;
            write_keys((char *)kc + (pair * hs * ctx + pos[b]) * esz, (size_t)ctx, k, lds, Tq, hs, bf16);
            write_values((char *)vc + ((pair * ctx + pos[b]) * hs) * esz, v, lds, Tq, hs, bf16);
        }
}
