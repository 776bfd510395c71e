/* AVX-512 bf16 GEMM (gemm_bf16.h):
 *   avx512bf16: a 6 x 64 micro-kernel, 24 zmm accumulators; per pair of k, 4
 *               loads of B (64 columns x 2 k), 6 broadcast A words, 24
 *               vdpbf16ps (32 multiply-adds each: twice an fp32 FMA's);
 *               and its 1..5-row forms for a unit's last rows.
 *   avx512f:    for CPUs without AVX512_BF16, no pair micro-kernel: the
 *               driver and the bf16 attention expand their pair panels to
 *               fp32 (expand_rows below: each word's high half, odd k, then
 *               its low half, even k, as vdpbf16ps adds them) and run the
 *               fp32 6 x 64 kernel, the same arithmetic by FMAs.
 * Both share the vector packing (pair words, fp32 -> bf16 rounding). */
#include <immintrin.h>

#include "kernels/cpu/bf16_split_avx512.h"
#include "kernels/cpu/gemm_bf16.h"

/* R x 64 tiles (R <= 6) on a 6-row A panel: kern_dp_6x64 for full tiles, and
 * the first R rows of one for a unit's last rows (kern_dp_rows), at R/6 of a
 * tile's vdpbf16ps instead of a whole tile on zero rows.  Each element gets
 * the same adds in the same order either way. */
static inline __attribute__((always_inline)) void kern_dp_rx64(const int R, int kp, const uint32_t *a, const uint32_t *b,
                                                               float *C, long ldc, int load_c, const float *bias) {
    __m512 c[6][4];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            c[r][v] = load_c ? _mm512_loadu_ps(C + r * ldc + 16 * v)
                             : (bias ? _mm512_loadu_ps(bias + 16 * v) : _mm512_setzero_ps());
    for (int p = 0; p < kp; p++, a += 6, b += 64) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16),
                       b2 = (__m512bh)_mm512_loadu_si512(b + 32), b3 = (__m512bh)_mm512_loadu_si512(b + 48);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            const __m512bh ar = (__m512bh)_mm512_set1_epi32((int)a[r]);
            c[r][0] = _mm512_dpbf16_ps(c[r][0], ar, b0);
            c[r][1] = _mm512_dpbf16_ps(c[r][1], ar, b1);
            c[r][2] = _mm512_dpbf16_ps(c[r][2], ar, b2);
            c[r][3] = _mm512_dpbf16_ps(c[r][3], ar, b3);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++) _mm512_storeu_ps(C + r * ldc + 16 * v, c[r][v]);
}

static void kern_dp_6x64(int kp, const uint32_t *a, const uint32_t *b, float *C, long ldc, int load_c,
                         const float *bias) {
    kern_dp_rx64(6, kp, a, b, C, ldc, load_c, bias);
}

static void kern_dp_rows(int rows, int kp, const uint32_t *a, const uint32_t *b, float *C, long ldc, int load_c,
                         const float *bias) {
    switch (rows) {
    case 1: kern_dp_rx64(1, kp, a, b, C, ldc, load_c, bias); break;
    case 2: kern_dp_rx64(2, kp, a, b, C, ldc, load_c, bias); break;
    case 3: kern_dp_rx64(3, kp, a, b, C, ldc, load_c, bias); break;
    case 4: kern_dp_rx64(4, kp, a, b, C, ldc, load_c, bias); break;
    default: kern_dp_rx64(5, kp, a, b, C, ldc, load_c, bias); break;
    }
}
/* Six rows of pair words (row r at src + r*ld, nb <= 6 of them, zero rows
 * past nb) into an A panel dst[q*6 + r], q < kq: 16 words of each row in a
 * register, then each of the six output vectors (96 words = 16 q x 6 r)
 * gathered from the rows by masked permutes (lane l of output v is word
 * (16v+l)/6 of row (16v+l)%6).  The generic 16x16 transpose has no 6-wide
 * form, and its scalar fallback was ~80% of pack_bt in a bf16 prefill. */
/* lane l of output vector v: word (16v+l)/6 of row (16v+l)%6 */
static const int32_t rows6_idx[6][16] = {
    {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2},         {2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 5, 5},
    {5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7},         {8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10},
    {10, 10, 11, 11, 11, 11, 11, 11, 12, 12, 12, 12, 12, 12, 13, 13}, {13, 13, 13, 13, 14, 14, 14, 14, 14, 14, 15, 15, 15, 15, 15, 15}};
/* lanes of output v taken from row r: bit l set where (16v + l) % 6 == r
 * (constants: computing them per call was most of a call's time on the
 * attention's short rows) */
static const __mmask16 rows6_sel[6][6] = {
    {0x1041, 0x2082, 0x4104, 0x8208, 0x0410, 0x0820}, {0x4104, 0x8208, 0x0410, 0x0820, 0x1041, 0x2082},
    {0x0410, 0x0820, 0x1041, 0x2082, 0x4104, 0x8208}, {0x1041, 0x2082, 0x4104, 0x8208, 0x0410, 0x0820},
    {0x4104, 0x8208, 0x0410, 0x0820, 0x1041, 0x2082}, {0x0410, 0x0820, 0x1041, 0x2082, 0x4104, 0x8208}};
static void pack_rows6(uint32_t *dst, const uint32_t *src, long ld, int nb, int kq) {
    __m512i idx[6];
    for (int v = 0; v < 6; v++) idx[v] = _mm512_loadu_si512(rows6_idx[v]);
    for (int q = 0; q < kq; q += 16) {
        const int m = kq - q < 16 ? kq - q : 16;
        const __mmask16 lm = m == 16 ? (__mmask16)0xffff : (__mmask16)((1u << m) - 1);
        __m512i row[6];
        for (int r = 0; r < 6; r++) {
            row[r] = r < nb ? _mm512_maskz_loadu_epi32(lm, src + r * ld + q) : _mm512_setzero_si512();
            _mm_prefetch((const char *)(src + (6 + r) * ld + q), _MM_HINT_T0); /* the next panel's rows (pack_block's order) */
        }
        uint32_t *d = dst + (size_t)q * 6;
        for (int v = 0; v < 6; v++) {
            const int left = 6 * m - 16 * v; /* output words left from this vector on */
            if (left <= 0) break;
            __m512i o = _mm512_setzero_si512();
            for (int r = 0; r < 6; r++) o = _mm512_mask_permutexvar_epi32(o, rows6_sel[v][r], idx[v], row[r]);
            _mm512_mask_storeu_epi32(d + 16 * v, left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1), o);
        }
    }
}

/* the fp32 GEMM's in-register 16x16 transpose moves 32-bit words as they are
 * (B panels, 64 wide); A's 6-row panels by pack_rows6 */
static void pack_words(float *dst, const float *src, long ld, int nb, int kc, int NR) {
    if (NR == 6 && nb <= 6)
        pack_rows6((uint32_t *)dst, (const uint32_t *)src, ld, nb, kc);
    else
        gpt2c_gemm_kernel_avx512.pack_bt(dst, src, ld, nb, kc, NR);
}

/* ---- fp32 -> bf16 packing (gemm_bf16.h), rounded by gpt2c_bf16_round_hi
 * (bf16_split_avx512.h: gpt2c_bf16_from_f32's bits) */
static inline __mmask16 tail16(int n) { return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1); }

static void f32_pairs(uint32_t *d, const float *s, int nq) {
    /* 16 pair words from 32 floats: the high 16-bit halves of both vectors, in order */
    const __m512i odd = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29, 27, 25,
                                         23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    for (int q = 0; q < nq; q += 16) {
        const int m = nq - q; /* pairs left */
        const __mmask16 m0 = tail16(2 * m), m1 = tail16(2 * m - 16 > 0 ? 2 * m - 16 : 0);
        const __m512i u0 = _mm512_maskz_loadu_epi32(m0, s + 2 * q), u1 = _mm512_maskz_loadu_epi32(m1, s + 2 * q + 16);
        const __m512i w = _mm512_permutex2var_epi16(gpt2c_bf16_round_hi(u0), odd, gpt2c_bf16_round_hi(u1));
        _mm512_mask_storeu_epi32(d + q, tail16(m), w);
    }
}

static void f32_2rows(uint32_t *d, const float *s0, const float *s1, int n) {
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail16(n - i);
        const __m512i lo = _mm512_srli_epi32(gpt2c_bf16_round_hi(_mm512_maskz_loadu_epi32(m, s0 + i)), 16);
        const __m512i hi = gpt2c_bf16_round_hi(_mm512_maskz_loadu_epi32(m, s1 + i));
        _mm512_mask_storeu_epi32(d + i, m, _mm512_mask_blend_epi16(0x55555555u, hi, lo));
    }
}

static void bf16_2rows(uint32_t *d, const uint16_t *s0, const uint16_t *s1, int n) {
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail16(n - i);
        const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s0 + i));
        const __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, s1 + i));
        _mm512_mask_storeu_epi32(d + i, m, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
}

const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_avx512bf16 = {"avx512bf16", 6,         64,         kern_dp_6x64, pack_words,
                                                                f32_pairs,    f32_2rows, bf16_2rows, NULL,         NULL,
                                                                kern_dp_rows};

/* fp32 panels (gemm_bf16.h `expand`): rows of P pair words -> two rows of P
 * floats each (the high halves, then the low), in place, from the back.
 * P = 64 (B panels): row by row, 4 vectors in, 8 out.  P = 6 (A panels):
 * eight rows (48 words, 3 vectors) become 96 floats (6 vectors), each output
 * vector gathered from two inputs by a permute, then split by a mask (a
 * scalar loop over 6-word rows was a third of the micro-kernel's time in a
 * bf16 prefill).  Loads precede stores in each step and every store lands
 * at or beyond its own sources, never on rows still to be read. */
static const int32_t ex6_idx[6][16] = {
    {0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9},         {10, 11, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 12, 13},
    {14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 18, 19, 20, 21, 22, 23}, {8, 9, 10, 11, 12, 13, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17},
    {18, 19, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 20, 21}, {22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 26, 27, 28, 29, 30, 31}};
static int expand_rows(uint32_t *buf, long rows, int P) {
    if (P == 64) {
        for (long s = rows - 1; s >= 0; s--) {
            __m512i w[4];
            for (int v = 0; v < 4; v++) w[v] = _mm512_loadu_si512(buf + s * 64 + 16 * v);
            for (int v = 0; v < 4; v++) {
                _mm512_storeu_ps(buf + s * 128 + 16 * v, gpt2c_bf16_hi_ps(w[v]));
                _mm512_storeu_ps(buf + s * 128 + 64 + 16 * v, gpt2c_bf16_lo_ps(w[v]));
            }
        }
        return 1;
    }
    if (P != 6) return 0;
    const long r8 = rows / 8 * 8;
    for (long s = rows - 1; s >= r8; s--) /* the last rows, one at a time */
        for (int j = 5; j >= 0; j--) {
            const uint32_t w = buf[s * 6 + j];
            buf[s * 12 + 6 + j] = w << 16, buf[s * 12 + j] = w & 0xffff0000u;
        }
    const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
    __m512i idx[6];
    for (int v = 0; v < 6; v++) idx[v] = _mm512_loadu_si512(ex6_idx[v]);
    /* lanes of output v holding a low half: (16v + l) % 12 >= 6 */
    static const __mmask16 lo_lanes[6] = {0x0fc0, 0xc0fc, 0xfc0f, 0x0fc0, 0xc0fc, 0xfc0f};
    for (long s = r8 - 8; s >= 0; s -= 8) {
        const uint32_t *src = buf + s * 6;
        const __m512i a = _mm512_loadu_si512(src), b = _mm512_loadu_si512(src + 16), c = _mm512_loadu_si512(src + 32);
        uint32_t *dst = buf + s * 12;
        for (int v = 0; v < 6; v++) {
            const __m512i x = v < 3 ? _mm512_permutex2var_epi32(a, idx[v], b) : _mm512_permutex2var_epi32(b, idx[v], c);
            /* the split of bf16_split_avx512.h, lane by lane: high halves, and low ones under the mask */
            const __m512i y = _mm512_mask_slli_epi32(_mm512_and_si512(x, hi), lo_lanes[v], x, 16);
            _mm512_storeu_si512(dst + 16 * v, y);
        }
    }
    return 1;
}

/* the driver runs its GEMMs on fp32 panels with the fp32 6 x 64 kernel */
const gemm_bf16_isa_kernel gpt2c_gemm_bf16_kernel_avx512f = {"avx512f-fp32", 6,         64,         NULL,
                                                             pack_words,     f32_pairs, f32_2rows,  bf16_2rows,
                                                             &gpt2c_gemm_kernel_avx512, expand_rows, NULL};
