/* Causal attention for bf16 precision (ops.h: attention_forward_bf16,
 * attention_backward_bf16); included by ops_impl.h after attention_impl.h,
 * whose blocking, masking and online softmax it follows tile for tile.
 *
 * The difference: every product of two activations (Q K^T, P V and, in the
 * backward, dO V^T, P^T dO, dS^T Q, dS K) runs on the bf16 GEMM micro-kernel
 * of this ISA (gemm_bf16.h: vdpbf16ps where the CPU has AVX512_BF16, else the
 * emulation with the same bits), its operands rounded to bf16 (nearest even)
 * as they are packed into pair panels, with fp32 accumulation, as PyTorch's
 * autocast runs attention.  The softmax (max, exp, sums), the log-sum-exp
 * state, D = dO . O and every accumulation across tiles stay fp32.
 *
 * Pair panels (gemm_bf16.h): an A panel holds MR rows, a[p*MR + r] = the bf16
 * of (row r, k = 2p) in the low half and (row r, k = 2p+1) in the high half;
 * a B panel NR columns, b[p*NR + j].  A pair past K gets a zero partner.
 * Where a product would need a 32-bit transpose per tile, it is computed
 * transposed instead (O^T = V^T P^T, dV^T = dO^T P, dK^T = Q^T dS), so each
 * tile's probabilities are packed from two contiguous rows at a time; the
 * operands that do not change within a (batch, head) pair are packed once for
 * it, in per-thread buffers.
 *
 * Where the ISA's bf16 kernel runs on fp32 panels (gemm_bf16.h `fp32`: CPUs
 * without AVX512_BF16), every panel is packed expanded instead: pair row p
 * becomes two fp32 rows, 2p the high halves (k = 2p+1) and 2p+1 the low
 * halves (k = 2p), and the fp32 micro-kernel runs 2*kp steps of k: the same
 * adds in the same order (the bits of the pair kernel), without unpacking
 * words in the inner loop.  Each panel then takes xw = 2 times the words, so
 * every offset and stride below (in words, at pair-row or panel boundaries)
 * is scaled by xw. */

#include <omp.h>
#include <stdlib.h>
#if defined(__AVX512F__)
#include "kernels/cpu/transpose16_avx512.h"
#endif

#define ATT_PF 8 /* rows prefetched ahead while packing */

/* The kernel the attention packs for: the ISA's, or (GPT2C_ATT_PORTABLE_PACK
 * set: tests, the fast packing's bits) a copy without its vector packing */
static const gemm_bf16_isa_kernel *att_kernel(gemm_bf16_isa_kernel *copy) {
    const gemm_bf16_isa_kernel *kk = gpt2c_cpu_gemm_bf16_kernel(OPS_ISA);
    if (!getenv("GPT2C_ATT_PORTABLE_PACK")) return kk;
    *copy = *kk;
    copy->f32_pairs = NULL, copy->pack_words = NULL;
    return copy;
}

static inline uint32_t att_word(float lo, float hi) { return gpt2c_bf16_from_f32(lo) | gpt2c_bf16_f32_bits(hi); }

/* pair row slot d (panel width P) = word w: the word itself (xw 1), or its
 * high half at d and its low half at d + P as fp32 values (xw 2, expanded) */
static inline void att_put(uint32_t *d, int P, uint32_t w, int xw) {
    if (xw == 1) {
        d[0] = w;
    } else {
        d[0] = w & 0xffff0000u;
        d[P] = w << 16;
    }
}

/* A panels of n rows (rows past n zero) with pairs over k < K (row r at src + r*lds):
 * dst[(r/MR)*(MR*kp) + p*MR + r%MR], kp = ceil(K/2), rows padded to MR
 * (every offset times xw: att_put) */
static void att_pack_rows_a(const gemm_bf16_isa_kernel *kk, uint32_t *dst, const float *src, long lds, int n, int K, int MR,
                            int xw) {
    const int kp = (K + 1) / 2, nm = att_up(n, MR);
    enum { FAST_WORDS = 4096 }; /* tmp: a panel's rows of pair words */
    if (xw == 1 && K % 2 == 0 && kk->f32_pairs && kk->pack_words && (size_t)MR * kp <= FAST_WORDS) {
        /* each panel's rows rounded to pair words contiguously (vector), then
         * the kernel's 32-bit word transpose into the panel (pack_words: rows
         * past the panel's last zero); the same words as the loop below (a
         * scalar store every MR words was ~18% of the bf16 attention's time) */
        uint32_t tmp[FAST_WORDS];
        for (int r0 = 0; r0 < nm; r0 += MR) {
            const int rn = att_min(n - r0, MR);
            for (int i = 0; i < rn; i++) {
                const float *s = src + (size_t)(r0 + i) * lds;
                if (r0 + i + ATT_PF < n) /* rows are C3 floats apart: the prefetchers do not follow */
                    for (int o = 0; o < K; o += 16) __builtin_prefetch(s + (size_t)ATT_PF * lds + o);
                kk->f32_pairs(tmp + (size_t)i * kp, s, kp);
            }
            kk->pack_words((float *)(dst + (size_t)r0 * kp), (const float *)tmp, kp, rn, kp, MR);
        }
        return;
    }
    for (int r = 0; r < nm; r++) {
        uint32_t *d = dst + (size_t)(r / MR) * MR * kp * xw + r % MR;
        const float *s = src + (size_t)r * lds;
        uint32_t w[kp];
        if (r + ATT_PF < n) /* rows are C3 floats apart: the prefetchers do not follow */
            for (int o = 0; o < K; o += 16) __builtin_prefetch(s + (size_t)ATT_PF * lds + o);
        if (r >= n) {
            for (int p = 0; p < kp; p++) w[p] = 0;
        } else {
#pragma omp simd
            for (int p = 0; p < K / 2; p++) w[p] = att_word(s[2 * p], s[2 * p + 1]);
            if (K % 2) w[K / 2] = att_word(s[K - 1], 0.0f);
        }
        for (int p = 0; p < kp; p++) att_put(d + (size_t)p * MR * xw, MR, w[p], xw);
    }
}

/* B panels of n columns (columns past n, up to att_up(n, NR), zero), column j
 * = row j of src, pairs over k < K: dst[(j/NR)*(NR*kp) + p*NR + j%NR] */
static void att_pack_rows_b(const gemm_bf16_isa_kernel *kk, uint32_t *dst, const float *src, long lds, int n, int K, int NR,
                            int xw) {
    att_pack_rows_a(kk, dst, src, lds, n, K, NR, xw); /* the same layout with NR for MR */
}

/* A panels of the transpose: rows = the K' = cols columns of src (an n x cols
 * block, row i at src + i*lds), pairs over src's rows i < n (the GEMM's k):
 * dst[(c/MR)*(MR*kp) + p*MR + c%MR] = (src[2p][c], src[2p+1][c]), kp = ceil(n/2),
 * columns padded to MR with zeros */
static void att_pack_cols_a(uint32_t *dst, const float *src, long lds, int n, int cols, int MR, int xw) {
    const int kp = (n + 1) / 2, cm = att_up(cols, MR);
    for (int p = 0; p < kp; p++) {
        const float *s0 = src + (size_t)(2 * p) * lds, *s1 = 2 * p + 1 < n ? s0 + lds : NULL;
        uint32_t w[cm];
        if (2 * p + 2 + ATT_PF < n)
            for (int o = 0; o < cols; o += 16)
                __builtin_prefetch(s0 + (size_t)ATT_PF * lds + o), __builtin_prefetch(s0 + (size_t)(ATT_PF + 1) * lds + o);
#pragma omp simd
        for (int c = 0; c < cols; c++) w[c] = att_word(s0[c], s1 ? s1[c] : 0.0f);
        for (int c = cols; c < cm; c++) w[c] = 0;
        uint32_t *d = dst + (size_t)p * MR * xw;
        for (int c0 = 0; c0 < cm; c0 += MR, d += (size_t)MR * kp * xw)
            for (int r = 0; r < MR; r++) att_put(d + r, MR, w[c0 + r], xw);
    }
}

/* B panels from pairs of rows: dst[(j/NR)*(NR*kp) + p*NR + j%NR] =
 * (src[2p][j], src[2p+1][j]) for j < cols, zero for cols <= j < att_up(cols, NR);
 * kp = ceil(n/2), a row past n zero */
static void att_pack_pairs_b(uint32_t *dst, const float *src, long lds, int n, int cols, int NR, int xw) {
    const int kp = (n + 1) / 2, nn = att_up(cols, NR);
    for (int p = 0; p < kp; p++) {
        const float *s0 = src + (size_t)(2 * p) * lds, *s1 = s0 + lds;
        const int two = 2 * p + 1 < n;
        if (2 * p + 2 + ATT_PF < n)
            for (int o = 0; o < cols; o += 16)
                __builtin_prefetch(s0 + (size_t)ATT_PF * lds + o), __builtin_prefetch(s0 + (size_t)(ATT_PF + 1) * lds + o);
        for (int j0 = 0; j0 < nn; j0 += NR) {
            uint32_t *d = dst + ((size_t)(j0 / NR) * NR * kp + (size_t)p * NR) * xw;
            if (j0 + NR <= cols && xw == 1) {
#pragma omp simd
                for (int j = 0; j < NR; j++) d[j] = att_word(s0[j0 + j], two ? s1[j0 + j] : 0.0f);
            } else if (j0 + NR <= cols) { /* expanded: the high row (k = 2p+1), then the low one */
#pragma omp simd
                for (int j = 0; j < NR; j++) d[j] = two ? gpt2c_bf16_f32_bits(s1[j0 + j]) : 0u;
#pragma omp simd
                for (int j = 0; j < NR; j++) d[NR + j] = gpt2c_bf16_f32_bits(s0[j0 + j]);
            } else {
                for (int j = 0; j < NR; j++)
                    att_put(d + j, NR, j0 + j < cols ? att_word(s0[j0 + j], two ? s1[j0 + j] : 0.0f) : 0u, xw);
            }
        }
    }
}

/* dst[r*ldd + i] = src[i*lds + r] * (rs ? rs[r] : sc) for r < n, i < hs: a
 * tile kept transposed (O^T, dK^T, dV^T) stored as rows.  16 x 16 blocks
 * transposed in registers where the ISA has it (the strided loads, one
 * cache line each, were ~13% of the forward's own time); the same products. */
static void att_store_transposed(float *dst, long ldd, const float *src, long lds, int n, int hs, const float *rs,
                                 float sc) {
    int r0 = 0;
#if defined(__AVX512F__)
    for (; r0 + 16 <= n; r0 += 16) {
        const __m512 s = rs ? _mm512_loadu_ps(rs + r0) : _mm512_set1_ps(sc);
        int i0 = 0;
        for (; i0 + 16 <= hs; i0 += 16) {
            __m512 v[16];
            for (int j = 0; j < 16; j++) v[j] = _mm512_mul_ps(_mm512_loadu_ps(src + (size_t)(i0 + j) * lds + r0), s);
            transpose16(dst + (size_t)r0 * ldd + i0, ldd, v);
        }
        for (int r = r0; r < r0 + 16; r++)
            for (int i = i0; i < hs; i++) dst[(size_t)r * ldd + i] = src[(size_t)i * lds + r] * (rs ? rs[r] : sc);
    }
#endif
    for (int r = r0; r < n; r++)
        for (int i = 0; i < hs; i++) dst[(size_t)r * ldd + i] = src[(size_t)i * lds + r] * (rs ? rs[r] : sc);
}

/* C (M,N) [ldc] (+)= A panels x B panels over kp pairs; M a multiple of MR,
 * N of NR; consecutive A panels as words apart, B panels bs (expanded panels:
 * the fp32 kernel over 2*kp steps) */
static void att_gemm_bf16(const gemm_bf16_isa_kernel *kk, int M, int N, int kp, const uint32_t *A, size_t as,
                          const uint32_t *B, size_t bs, float *C, long ldc, int load_c) {
    const int MR = kk->mr, NR = kk->nr;
    for (int jr = 0; jr < N; jr += NR)
        for (int ir = 0; ir < M; ir += MR) {
            const uint32_t *a = A + (size_t)(ir / MR) * as, *b = B + (size_t)(jr / NR) * bs;
            if (kk->fp32)
                kk->fp32->kern(2 * kp, (const float *)a, 1, MR, (const float *)b, NR, C + (size_t)ir * ldc + jr, ldc, load_c,
                               NULL);
            else
                kk->kern(kp, a, b, C + (size_t)ir * ldc + jr, ldc, load_c, NULL);
        }
}

static void attention_forward_bf16(float *out, float *state, const float *qkv, int B, int T, int C, int NH) {
    gemm_bf16_isa_kernel kcopy;
    const gemm_bf16_isa_kernel *kk = att_kernel(&kcopy);
    const int hs = C / NH, C3 = 3 * C, MR = kk->mr, NR = kk->nr, xw = gpt2c_gemm_bf16_words_per_pair(kk);
    const int kph = (hs + 1) / 2, hsm = att_up(hs, MR); /* channel pairs; O^T rows padded to whole A panels */
    const int Tm = att_up(T, MR), kpT = (T + 1) / 2;
    const int ldq = ATT_FQ; /* row length of S^T and O^T (queries), a multiple of every NR */
    const float scale = 1.0f / sqrtf((float)hs);
    /* per thread: K as A panels (pairs over channels), V^T as A panels (pairs over keys) */
    const size_t per = ((size_t)Tm * kph + (size_t)hsm * kpT) * xw;
    uint32_t *work = malloc(sizeof(uint32_t) * per * (size_t)omp_get_max_threads());
    if (!work) { /* no memory for the panels: the fp32 attention (a different rounding, never wrong) */
        attention_forward(out, state, qkv, B, T, C, NH);
        return;
    }
#pragma omp parallel if (B * NH > 1)
    {
        uint32_t *kpan = work + per * (size_t)omp_get_thread_num(), *vpan = kpan + (size_t)Tm * kph * xw;
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < B * NH; bh++) {
            const int b = bh / NH, h = bh % NH;
            const float *qb = qkv + (size_t)b * T * C3 + h * hs, *kb = qb + C, *vb = qb + 2 * C;
            uint32_t qpan[ATT_FQ * kph * xw];   /* Q block as B panels (pairs over channels) */
            uint32_t ppan[(ATT_FQ * ATT_FK / 2 + ATT_FQ) * xw]; /* P^T of a tile as B panels (pairs over keys) */
            float st[ATT_FK * ldq];        /* S^T, then P^T: st[c*ldq + r] */
            float ot[hsm * ldq];           /* unnormalised output, transposed: ot[i*ldq + r] */
            float m[ATT_FQ], l[ATT_FQ], corr[ATT_FQ];
            att_pack_rows_a(kk, kpan, kb, C3, T, hs, MR, xw);
            att_pack_cols_a(vpan, vb, C3, T, hs, MR, xw);
            memset(st, 0, sizeof st);
            for (int i0 = 0; i0 < T; i0 += ATT_FQ) {
                const int qn = att_min(T - i0, ATT_FQ), nq = att_up(qn, NR);
                att_pack_rows_b(kk, qpan, qb + (size_t)i0 * C3, C3, qn, hs, NR, xw);
                for (int r = 0; r < ATT_FQ; r++) m[r] = -INFINITY, l[r] = 0.0f;
                memset(ot, 0, sizeof ot);
                const int jend = i0 + qn;
                for (int j0 = 0; j0 < jend; j0 += ATT_FK) {
                    const int jn = att_min(jend - j0, ATT_FK), mk = att_up(jn, MR), kpj = (jn + 1) / 2;
                    const int diag = j0 + jn - 1 > i0;
                    /* S^T = K Q^T: the tile's key panels start at key j0 (a multiple of MR) */
                    att_gemm_bf16(kk, mk, nq, kph, kpan + (size_t)j0 * kph * xw, (size_t)MR * kph * xw, qpan,
                                  (size_t)NR * kph * xw, st, ldq, 0);
                    att_softmax_tile(st, ldq, jn, nq, j0 - i0, diag, scale, m, l, corr);
                    for (int i = 0; i < hs; i++) {
                        float *orow = ot + (size_t)i * ldq;
#pragma omp simd
                        for (int r = 0; r < nq; r++) orow[r] *= corr[r];
                    }
                    /* O^T += V^T P^T over the tile's key pairs (j0 is even) */
                    att_pack_pairs_b(ppan, st, ldq, jn, nq, NR, xw); /* st has nq columns */
                    att_gemm_bf16(kk, hsm, nq, kpj, vpan + (size_t)(j0 / 2) * MR * xw, (size_t)MR * kpT * xw, ppan,
                                  (size_t)NR * kpj * xw, ot, ldq, 1);
                }
                float inv[ATT_FQ];
                for (int r = 0; r < qn; r++) {
                    inv[r] = 1.0f / l[r];
                    state[(size_t)bh * T + i0 + r] = m[r] + logf(l[r]);
                }
                att_store_transposed(out + ((size_t)b * T + i0) * C + h * hs, C, ot, ldq, qn, hs, inv, 1.0f);
            }
        }
    }
    free(work);
}

/* Backward, as attention_impl.h's (per tile of ATT_BK keys, blocks of ATT_BQ
 * queries from the diagonal on, P recomputed from the bf16 scores and lse):
 *   S = Q K^T,  dP = dO V^T  (A: Q, dO rows; B: K, V rows as columns),
 *   dV^T += dO^T P,  dK^T += Q^T dS  (A: dO^T, Q^T; B: P, dS by pairs of rows),
 *   dQ += (dS K) scale  (A: dS rows; B: K by pairs of rows). */
static void attention_backward_bf16(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                                    const float *state, int B, int T, int C, int NH) {
    gemm_bf16_isa_kernel kcopy;
    const gemm_bf16_isa_kernel *kk = att_kernel(&kcopy);
    const int hs = C / NH, C3 = 3 * C, MR = kk->mr, NR = kk->nr, xw = gpt2c_gemm_bf16_words_per_pair(kk);
    const int kph = (hs + 1) / 2, hsm = att_up(hs, MR), hsp = att_up(hs, NR);
    const int Tm = att_up(T, MR), kpT = (T + 1) / 2;
    const int ldk = ATT_BK; /* row length of P, dS and of dK^T, dV^T (keys): a multiple of every NR */
    const float scale = 1.0f / sqrtf((float)hs);
    /* per thread: Q, dO as A panels (pairs over channels); Q^T, dO^T as A panels
     * (pairs over queries); K as B panels by pairs of keys */
    const size_t rows_a = (size_t)Tm * kph * xw, cols_a = (size_t)hsm * kpT * xw;
    const size_t per = 2 * rows_a + 2 * cols_a + (size_t)hsp * kpT * xw + (size_t)T * hs; /* + dQ rows, contiguous */
    uint32_t *work = malloc(sizeof(uint32_t) * per * (size_t)omp_get_max_threads());
    if (!work) {
        attention_backward(dqkv, scratch, dout, qkv, out, state, B, T, C, NH);
        return;
    }
#pragma omp parallel if (B * NH > 1)
    {
        uint32_t *qa = work + per * (size_t)omp_get_thread_num(), *ga = qa + rows_a, *qt = ga + rows_a, *gt = qt + cols_a;
        uint32_t *kbp = gt + cols_a;
        float *dqa = (float *)(kbp + (size_t)hsp * kpT * xw); /* dQ of the pair, accumulated here, stored at the end */
#pragma omp for schedule(dynamic, 1)
        for (int bh = 0; bh < B * NH; bh++) {
            const int b = bh / NH, h = bh % NH;
            const float *qb = qkv + (size_t)b * T * C3 + h * hs, *kb = qb + C, *vb = qb + 2 * C;
            const float *ob = out + (size_t)b * T * C + h * hs, *gb = dout + (size_t)b * T * C + h * hs;
            const float *lse = state + (size_t)bh * T;
            float *dqb = dqkv + (size_t)b * T * C3 + h * hs, *dkb = dqb + C, *dvb = dqb + 2 * C;
            uint32_t kt[ATT_BK * kph * xw], vt[ATT_BK * kph * xw]; /* K, V tile as B panels (pairs over channels) */
            uint32_t pp[(ATT_BQ / 2 * ATT_BK + ATT_BK) * xw], dp[(ATT_BQ / 2 * ATT_BK + ATT_BK) * xw]; /* P, dS by pairs of rows */
            uint32_t da[att_up(ATT_BQ, MR) * (ATT_BK / 2) * xw];                                  /* dS as A panels */
            float ps[ATT_BQ * ldk], ds[ATT_BQ * ldk]; /* S then P;  dP then dS */
            float dkt[hsm * ldk], dvt[hsm * ldk];     /* dK^T / scale, dV^T of the tile */
            float tmp[ATT_BQ * hsp];
            att_pack_rows_a(kk, qa, qb, C3, T, hs, MR, xw);
            att_pack_rows_a(kk, ga, gb, C, T, hs, MR, xw);
            att_pack_cols_a(qt, qb, C3, T, hs, MR, xw);
            att_pack_cols_a(gt, gb, C, T, hs, MR, xw);
            att_pack_pairs_b(kbp, kb, C3, T, hs, NR, xw);
            memset(ps, 0, sizeof ps);
            memset(ds, 0, sizeof ds);
            memset(dqa, 0, sizeof(float) * T * hs);
            float Dall[T]; /* D_t = dO_t . out_t, once per pair */
            att_row_dots(Dall, gb, ob, C, T, hs);
            for (int j0 = 0; j0 < T; j0 += ATT_BK) {
                const int jn = att_min(T - j0, ATT_BK), kpj = (jn + 1) / 2;
                att_pack_rows_b(kk, kt, kb + (size_t)j0 * C3, C3, jn, hs, NR, xw);
                att_pack_rows_b(kk, vt, vb + (size_t)j0 * C3, C3, jn, hs, NR, xw);
                memset(dkt, 0, sizeof dkt);
                memset(dvt, 0, sizeof dvt);
                for (int i0 = j0 / ATT_BQ * ATT_BQ; i0 < T; i0 += ATT_BQ) {
                    const int qn = att_min(T - i0, ATT_BQ), mq = att_up(qn, MR), kpq = (qn + 1) / 2;
                    const int diag = j0 + jn - 1 > i0;
                    /* S / scale and dP; i0 is a multiple of MR (ATT_BQ is) */
                    att_gemm_bf16(kk, mq, ATT_BK, kph, qa + (size_t)i0 * kph * xw, (size_t)MR * kph * xw, kt,
                                  (size_t)NR * kph * xw, ps, ldk, 0);
                    att_gemm_bf16(kk, mq, ATT_BK, kph, ga + (size_t)i0 * kph * xw, (size_t)MR * kph * xw, vt,
                                  (size_t)NR * kph * xw, ds, ldk, 0);
                    att_probs_dscores(ps, ds, ldk, mq, qn, jn, i0, j0, diag, lse + i0, Dall + i0, scale);
                    /* dV^T += dO^T P and dK^T += Q^T dS over the block's query pairs (i0 is even) */
                    att_pack_pairs_b(pp, ps, ldk, qn, ATT_BK, NR, xw);
                    att_pack_pairs_b(dp, ds, ldk, qn, ATT_BK, NR, xw);
                    att_gemm_bf16(kk, hsm, ATT_BK, kpq, gt + (size_t)(i0 / 2) * MR * xw, (size_t)MR * kpT * xw, pp,
                                  (size_t)NR * kpq * xw, dvt, ldk, 1);
                    att_gemm_bf16(kk, hsm, ATT_BK, kpq, qt + (size_t)(i0 / 2) * MR * xw, (size_t)MR * kpT * xw, dp,
                                  (size_t)NR * kpq * xw, dkt, ldk, 1);
                    /* dS K over the tile's key pairs (j0 is even) */
                    att_pack_rows_a(kk, da, ds, ldk, mq, jn, MR, xw);
                    att_gemm_bf16(kk, mq, hsp, kpj, da, (size_t)MR * kpj * xw, kbp + (size_t)(j0 / 2) * NR * xw,
                                  (size_t)NR * kpT * xw, tmp, hsp, 0);
                    for (int r = 0; r < qn; r++) {
                        float *dq = dqa + (size_t)(i0 + r) * hs;
                        const float *tr = tmp + (size_t)r * hsp;
#pragma omp simd
                        for (int i = 0; i < hs; i++) dq[i] += tr[i] * scale;
                    }
                }
                att_store_transposed(dkb + (size_t)j0 * C3, C3, dkt, ldk, jn, hs, NULL, scale);
                att_store_transposed(dvb + (size_t)j0 * C3, C3, dvt, ldk, jn, hs, NULL, 1.0f);
            }
            for (int t = 0; t < T; t++) memcpy(dqb + (size_t)t * C3, dqa + (size_t)t * hs, sizeof(float) * hs);
        }
    }
    free(work);
}
