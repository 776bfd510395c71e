/* Causal attention for the cpu backend, blocked (FlashAttention-2 style);
 * included by ops_impl.h, so compiled once per ISA (vexp, OPS_ISA from there).
 *
 * Per (b, h) pair (one thread each, so no races), tiles of queries x keys;
 * every tile product goes through the GEMM micro-kernel of this ISA
 * (gpt2c_cpu_gemm_kernel: MR x NR tiles of C, MR | 12, NR | 64), called directly on
 * small zero-padded buffers on the stack.  Within a pair the tile order is
 * fixed, so results do not depend on the thread count.
 *
 * No operand is read in place: in qkv its rows are 3C or C floats apart (9
 * or 3 KiB for GPT-2 124M), so every fourth row falls in the same four L1
 * sets and a 48-64 row tile (4 lines a row) needs 12-16 ways of an 8-way
 * L1: it missed on every pass.  Each pair's K and V (forward), Q and dO
 * (backward) are copied once into contiguous rows, dQ accumulates in
 * contiguous rows and is stored at the end, and the backward's K tile is
 * copied per tile; the copies prefetch their source rows, and transposes
 * use the ISA's 16x16 in-register transpose.  Same sums; kernel alone,
 * Cascade Lake, 2 threads, B=4 (the session start = 1): T=1024 forward 0.78x,
 * backward 0.64x the time; T=256 0.89x / 0.81x; T=64 0.90x / 0.85x.
 *
 * state = log-sum-exp lse_t = m_t + log l_t per query (B,NH,T), with
 * s_tj = q_t.k_j / sqrt(hs), m_t = max_j s_tj, l_t = sum_j exp(s_tj - m_t). */

#define ATT_FQ 64 /* forward: queries per block (a multiple of every NR) */
#define ATT_FK 48 /* forward: keys per tile (a multiple of every MR) */
#define ATT_BQ 48 /* backward: queries per block (a multiple of every MR) */
#define ATT_BK 64 /* backward: keys per tile (a multiple of every NR) */
#define ATT_PFW 4 /* rows of dK, dV prefetched ahead of their stores */

static inline int att_up(int a, int b) { return (a + b - 1) / b * b; }
static inline int att_min(int a, int b) { return a < b ? a : b; }

/* C (M,N) [ldc] = (load_c ? C : 0) + A (M,K) B (K,N) [ldb, rows contiguous];
 * M a multiple of MR, N of NR.  A by strides: rows (csa == 1) or columns
 * (rsa == 1) contiguous, as the micro-kernels take it. */
static void att_gemm(const gemm_isa_kernel *kk, int M, int N, int K, const float *A, long rsa, long csa,
                     const float *B, long ldb, float *C, long ldc, int load_c) {
    for (int jr = 0; jr < N; jr += kk->nr)
        for (int ir = 0; ir < M; ir += kk->mr)
            kk->kern(K, A + (size_t)ir * rsa, rsa, csa, B + jr, ldb, C + (size_t)ir * ldc + jr, ldc, load_c, NULL);
}

#define ATT_PFR 8 /* source rows prefetched ahead by the copies: rows C or 3C apart, which the prefetchers do not follow */

static inline void att_prefetch_row(const float *row, int hs) {
    for (int i = 0; i < hs; i += 16) __builtin_prefetch(row + i);
}

/* dst[i*ldd + r] = src[r*lds + i] for r < n, i < hs; zero for n <= r < nn:
 * the ISA's in-register transpose (the GEMM's B packing) where nn == ldd */
static void att_transpose(const gemm_isa_kernel *kk, float *dst, int ldd, const float *src, long lds, int n, int nn,
                          int hs) {
    if (kk->pack_bt && nn == ldd) {
        kk->pack_bt(dst, src, lds, n, hs, ldd);
        return;
    }
    for (int r = 0; r < nn; r++) {
        if (r + ATT_PFR < n) att_prefetch_row(src + (size_t)(r + ATT_PFR) * lds, hs);
        for (int i = 0; i < hs; i++) dst[(size_t)i * ldd + r] = r < n ? src[(size_t)r * lds + i] : 0.0f;
    }
}

/* dst rows [r*ldd, +hs) = src rows [r*lds, +hs) for r < n; zero rows for n <= r < nn */
static void att_copy_rows(float *dst, int ldd, const float *src, long lds, int n, int nn, int hs) {
    for (int r = 0; r < nn; r++) {
        if (r + ATT_PFR < n) att_prefetch_row(src + (size_t)(r + ATT_PFR) * lds, hs);
        if (r < n)
            memcpy(dst + (size_t)r * ldd, src + (size_t)r * lds, sizeof(float) * hs);
        else
            memset(dst + (size_t)r * ldd, 0, sizeof(float) * hs);
    }
}

/* One key tile of the forward's online softmax, on S^T (jn keys x nq queries,
 * raw scores st[c*ldq + r]; query i0 + r sees key j0 + c iff r >= lim0 + c,
 * lim0 = j0 - i0, checked only when diag): the new running max per query
 *   m' = max(m, max_c s_rc scale)     (masked scores are -inf),
 * the rescale corr = exp(m - m') applied to l here (the caller applies it to
 * its output rows), then P^T = exp(s scale - m') in place and l += its sums
 * in key order.  m = -inf only before the first tile, where l = O = 0 (vexp
 * clamps: no NaN).  Shared by the fp32 and bf16 forwards. */
static void att_softmax_tile(float *st, int ldq, int jn, int nq, int lim0, int diag, float scale, float *m, float *l,
                             float *corr) {
    float mx[ATT_FQ];
    for (int r = 0; r < nq; r++) mx[r] = m[r];
    for (int c = 0; c < jn; c++) {
        const float *s = st + (size_t)c * ldq;
        const int lim = lim0 + c;
        if (diag) {
#pragma omp simd
            for (int r = 0; r < nq; r++) {
                const float x = r >= lim ? s[r] * scale : -INFINITY;
                mx[r] = x > mx[r] ? x : mx[r];
            }
        } else {
#pragma omp simd
            for (int r = 0; r < nq; r++) {
                const float x = s[r] * scale;
                mx[r] = x > mx[r] ? x : mx[r];
            }
        }
    }
#pragma omp simd
    for (int r = 0; r < nq; r++) {
        corr[r] = vexp(m[r] - mx[r]);
        l[r] *= corr[r];
        m[r] = mx[r];
    }
    for (int c = 0; c < jn; c++) {
        float *s = st + (size_t)c * ldq;
        const int lim = lim0 + c;
#pragma omp simd
        for (int r = 0; r < nq; r++) {
            const float p = (!diag || r >= lim) ? vexp(s[r] * scale - m[r]) : 0.0f;
            s[r] = p;
            l[r] += p;
        }
    }
}

/* The backward's probabilities and score gradients of one block (mq rows, of
 * which qn are queries i0.., x ATT_BK keys j0..; rows of ldk), in place:
 *   P = exp(S scale - lse) where the query sees the key, else 0;  dS = P o (dP - D)
 * lse, D: the block's rows (lse + i0, D + i0).  Shared by fp32 and bf16. */
static void att_probs_dscores(float *ps, float *ds, int ldk, int mq, int qn, int jn, int i0, int j0, int diag,
                              const float *lse, const float *D, float scale) {
    for (int r = 0; r < mq; r++) {
        float *p = ps + (size_t)r * ldk, *d = ds + (size_t)r * ldk;
        /* keys c < cn are seen by query i0 + r (none for padding rows) */
        const int cn = r >= qn ? 0 : diag ? att_min(jn, i0 + r - j0 + 1) : jn;
        const float L = r < qn ? lse[r] : 0.0f, Dr = r < qn ? D[r] : 0.0f;
#pragma omp simd
        for (int c = 0; c < ATT_BK; c++) {
            const float pc = c < cn ? vexp(p[c] * scale - L) : 0.0f;
            p[c] = pc;
            d[c] = pc * (d[c] - Dr);
        }
    }
}

/* D_t = dO_t . out_t for every query t of a (batch, head) pair (rows C apart) */
static void att_row_dots(float *D, const float *g, const float *o, long ld, int T, int hs) {
    for (int t = 0; t < T; t++) {
        const float *gt = g + (size_t)t * ld, *ot = o + (size_t)t * ld;
        float d = 0.0f;
#pragma omp simd reduction(+ : d)
        for (int i = 0; i < hs; i++) d += gt[i] * ot[i];
        D[t] = d;
    }
}

/* Per-thread buffer for the (batch, head) pair being worked on, grown as
 * needed: the forward's K and V rows, the backward's Q and dO rows and its
 * dQ accumulator, all contiguous.  NULL if it cannot be had: the tiles are
 * then copied one by one and dQ accumulates in dqkv (the same sums). */
static _Thread_local float *tl_pair;
static _Thread_local size_t tl_pair_cap;

static float *att_pair_buffer(size_t n) { return gpt2c_cpu_grow_buffer(&tl_pair, &tl_pair_cap, n); }

/* GPT2C_ATT_NO_PAIR_BUFFER set: no pair buffer (tests: the fallback's bits);
 * read once per call, outside the parallel loop */
static int att_use_pair_buffer(void) { return getenv("GPT2C_ATT_NO_PAIR_BUFFER") == NULL; }

static size_t attention_state_floats(int B, int T, int NH) { return (size_t)B * NH * T; }
static size_t attention_scratch_floats(int B, int T, int NH) {
    (void)B, (void)NH;
    return (size_t)T; /* unused: tile buffers live on the stack */
}

/* Forward, per block of ATT_FQ queries (outer) and tile of ATT_FK keys
 * (inner, up to the diagonal).  The scores are computed transposed,
 * S^T (keys x queries) = K Q^T, so that Q^T is built once per block and
 * the online softmax runs across queries in SIMD lanes (a column each):
 *   m' = max(m, max_j s_tj),  c = exp(m - m'),  l = c l + sum_j exp(s_tj - m'),
 *   O_t = c O_t + sum_j exp(s_tj - m') v_j           (O += P V, P read as (P^T)^T)
 * and at the end out_t = O_t / l_t.  Only tiles crossing the diagonal mask. */
static void attention_forward(float *out, float *state, const float *qkv, int B, int T, int C, int NH) {
    const gemm_isa_kernel *kk = gpt2c_cpu_gemm_kernel(OPS_ISA);
    const int hs = C / NH, C3 = 3 * C, MR = kk->mr, NR = kk->nr;
    const int hsp = att_up(hs, NR);                     /* O rows padded to whole B panels */
    const int fqp = att_up(ATT_FQ, MR);                 /* O rows computed at most */
    const int ldq = att_up(fqp, 16);                    /* row length of S^T: >= fqp, P^T read as A */
    const float scale = 1.0f / sqrtf((float)hs);
    const int use_pair = att_use_pair_buffer();
#pragma omp parallel for schedule(dynamic, 1) if (B * NH > 1)
    for (int bh = 0; bh < B * NH; bh++) {
        const int b = bh / NH, h = bh % NH;
        const float *qb = qkv + (size_t)b * T * C3 + h * hs, *kb = qb + C, *vb = qb + 2 * C;
        float qt[hs * ATT_FQ];                     /* Q block transposed: qt[i*FQ + r] */
        float kr[ATT_FK * hs];                     /* K tile rows, zero-padded (last tile) */
        float vr[ATT_FK * hsp];                    /* V tile, rows zero-padded to hsp */
        float st[ATT_FK * ldq];                    /* S^T, then P^T: st[c*ldq + r] */
        float o[fqp * hsp];                        /* unnormalised output rows */
        float m[ATT_FQ], l[ATT_FQ], corr[ATT_FQ];
        memset(st, 0, sizeof st); /* columns past those computed stay zero: P^T is read up to fqp */
        /* the pair's K rows (zero rows up to Tm) and V rows (zero-padded to hsp), copied once */
        const int Tm = att_up(T, MR);
        float *kc = use_pair ? att_pair_buffer((size_t)Tm * hs + (size_t)T * hsp) : NULL;
        float *vc = kc ? kc + (size_t)Tm * hs : NULL;
        if (kc) {
            att_copy_rows(kc, hs, kb, C3, T, Tm, hs);
            if (hsp != hs) memset(vc, 0, sizeof(float) * T * hsp);
            att_copy_rows(vc, hsp, vb, C3, T, T, hs);
        } else {
            memset(vr, 0, sizeof vr);
        }
        for (int i0 = 0; i0 < T; i0 += ATT_FQ) {
            const int qn = att_min(T - i0, ATT_FQ), nq = att_up(qn, NR), mq = att_up(qn, MR);
            att_transpose(kk, qt, ATT_FQ, qb + (size_t)i0 * C3, C3, qn, nq, hs);
            for (int r = 0; r < ATT_FQ; r++) m[r] = -INFINITY, l[r] = 0.0f;
            memset(o, 0, sizeof(float) * mq * hsp);
            const int jend = i0 + qn; /* keys any query of the block sees */
            for (int j0 = 0; j0 < jend; j0 += ATT_FK) {
                const int jn = att_min(jend - j0, ATT_FK), mk = att_up(jn, MR);
                const int diag = j0 + jn - 1 > i0; /* some key after some query: mask */
                const float *ka = kc ? kc + (size_t)j0 * hs : kb + (size_t)j0 * C3;
                long lda = kc ? hs : C3;
                if (!kc && mk != jn) { /* padding rows needed */
                    att_copy_rows(kr, hs, ka, C3, jn, mk, hs);
                    ka = kr, lda = hs;
                }
                att_gemm(kk, mk, nq, hs, ka, lda, 1, qt, ATT_FQ, st, ldq, 0);
                att_softmax_tile(st, ldq, jn, nq, j0 - i0, diag, scale, m, l, corr);
                for (int r = 0; r < qn; r++) {
                    float *orow = o + (size_t)r * hsp;
                    const float cr = corr[r];
#pragma omp simd
                    for (int i = 0; i < hs; i++) orow[i] *= cr;
                }
                /* O += P V over the jn keys of the tile */
                const float *va = vc ? vc + (size_t)j0 * hsp : vr;
                if (!vc) att_copy_rows(vr, hsp, vb + (size_t)j0 * C3, C3, jn, jn, hs);
                att_gemm(kk, mq, hsp, jn, st, 1, ldq, va, hsp, o, hsp, 1);
            }
            for (int r = 0; r < qn; r++) {
                const float inv = 1.0f / l[r], *orow = o + (size_t)r * hsp;
                float *dst = out + ((size_t)b * T + i0 + r) * C + h * hs;
#pragma omp simd
                for (int i = 0; i < hs; i++) dst[i] = orow[i] * inv;
                state[(size_t)bh * T + i0 + r] = m[r] + logf(l[r]);
            }
        }
    }
}

/* Backward, per tile of ATT_BK keys (outer: its dK, dV stay in buffers) and
 * block of ATT_BQ queries (inner, from the diagonal on).  With P recomputed
 * from Q, K and lse, and D_t = dout_t . out_t:
 *   S = Q K^T scale,  P = exp(S - lse),  dP = dO V^T,  dS = P o (dP - D)
 *   dV += P^T dO,  dK += dS^T Q scale,  dQ += dS K scale
 * The two transposed products read P and dS as A with contiguous columns. */
static void attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
                               const float *state, int B, int T, int C, int NH) {
    (void)scratch;
    const gemm_isa_kernel *kk = gpt2c_cpu_gemm_kernel(OPS_ISA);
    const int hs = C / NH, C3 = 3 * C, MR = kk->mr, NR = kk->nr;
    const int hsp = att_up(hs, NR);   /* rows of dK, dV, Q, dO, dQ padded to whole B panels */
    const int bkp = att_up(ATT_BK, MR); /* dK, dV rows computed at most */
    const int ldk = att_up(bkp, 16);  /* row length of P, dS: >= bkp, read transposed as A */
    const float scale = 1.0f / sqrtf((float)hs);
    const int use_pair = att_use_pair_buffer();
#pragma omp parallel for schedule(dynamic, 1) if (B * NH > 1)
    for (int bh = 0; bh < B * NH; bh++) {
        const int b = bh / NH, h = bh % NH;
        const float *qb = qkv + (size_t)b * T * C3 + h * hs, *kb = qb + C, *vb = qb + 2 * C;
        const float *ob = out + (size_t)b * T * C + h * hs, *gb = dout + (size_t)b * T * C + h * hs;
        const float *lse = state + (size_t)bh * T;
        float *dqb = dqkv + (size_t)b * T * C3 + h * hs, *dkb = dqb + C, *dvb = dqb + 2 * C;
        float kt[hs * ATT_BK], vt[hs * ATT_BK];     /* K, V tile transposed: kt[i*BK + c] */
        float kr[ATT_BK * hsp];                     /* K tile rows, zero-padded to hsp */
        float dka[bkp * hsp], dva[bkp * hsp];       /* dK / scale, dV of the tile */
        float qr[ATT_BQ * hsp], gr[ATT_BQ * hsp];   /* Q, dO block rows, zero-padded to hsp */
        float ps[ATT_BQ * ldk], ds[ATT_BQ * ldk];   /* S then P;  dP then dS */
        float tmp[ATT_BQ * hsp];
        memset(ps, 0, sizeof ps); /* columns past ATT_BK stay zero: read up to bkp */
        memset(ds, 0, sizeof ds);
        memset(kr, 0, sizeof kr);
        /* dQ accumulates in a contiguous buffer, beside the pair's Q and dO rows
         * (zero-padded to Tm rows, hsp columns), copied once */
        const int Tm = att_up(T, MR);
        float *pair = use_pair ? att_pair_buffer((size_t)T * hs + (size_t)2 * Tm * hsp) : NULL;
        float *dqa = pair ? pair : dqb, *qc = pair ? pair + (size_t)T * hs : NULL, *gc = qc ? qc + (size_t)Tm * hsp : NULL;
        const long lddq = pair ? hs : C3;
        if (pair) {
            memset(dqa, 0, sizeof(float) * T * hs);
            if (hsp != hs) memset(qc, 0, sizeof(float) * 2 * Tm * hsp);
            att_copy_rows(qc, hsp, qb, C3, T, Tm, hs);
            att_copy_rows(gc, hsp, gb, C, T, Tm, hs);
        } else {
            memset(qr, 0, sizeof qr);
            memset(gr, 0, sizeof gr);
            for (int t = 0; t < T; t++) memset(dqb + (size_t)t * C3, 0, sizeof(float) * hs);
        }
        float Dall[T]; /* D_t = dO_t . out_t, once per pair (each key tile's blocks reread it) */
        att_row_dots(Dall, gb, ob, C, T, hs);
        for (int j0 = 0; j0 < T; j0 += ATT_BK) {
            const int jn = att_min(T - j0, ATT_BK), mk = att_up(jn, MR);
            att_transpose(kk, kt, ATT_BK, kb + (size_t)j0 * C3, C3, jn, ATT_BK, hs);
            att_transpose(kk, vt, ATT_BK, vb + (size_t)j0 * C3, C3, jn, ATT_BK, hs);
            att_copy_rows(kr, hsp, kb + (size_t)j0 * C3, C3, jn, jn, hs);
            memset(dka, 0, sizeof(float) * mk * hsp);
            memset(dva, 0, sizeof(float) * mk * hsp);
            for (int i0 = j0 / ATT_BQ * ATT_BQ; i0 < T; i0 += ATT_BQ) {
                const int qn = att_min(T - i0, ATT_BQ), mq = att_up(qn, MR);
                const int diag = j0 + jn - 1 > i0;
                const float *qa = qc ? qc + (size_t)i0 * hsp : qr, *ga = gc ? gc + (size_t)i0 * hsp : gr;
                if (!qc) {
                    att_copy_rows(qr, hsp, qb + (size_t)i0 * C3, C3, qn, mq, hs);
                    att_copy_rows(gr, hsp, gb + (size_t)i0 * C, C, qn, mq, hs);
                }
                att_gemm(kk, mq, ATT_BK, hs, qa, hsp, 1, kt, ATT_BK, ps, ldk, 0); /* S / scale */
                att_gemm(kk, mq, ATT_BK, hs, ga, hsp, 1, vt, ATT_BK, ds, ldk, 0); /* dP */
                att_probs_dscores(ps, ds, ldk, mq, qn, jn, i0, j0, diag, lse + i0, Dall + i0, scale);
                att_gemm(kk, mk, hsp, qn, ps, 1, ldk, ga, hsp, dva, hsp, 1); /* dV += P^T dO */
                att_gemm(kk, mk, hsp, qn, ds, 1, ldk, qa, hsp, dka, hsp, 1); /* dK += dS^T Q */
                att_gemm(kk, mq, hsp, jn, ds, ldk, 1, kr, hsp, tmp, hsp, 0);   /* dS K */
                for (int r = 0; r < qn; r++) {
                    float *dq = dqa + (size_t)(i0 + r) * lddq;
                    const float *tr = tmp + (size_t)r * hsp;
#pragma omp simd
                    for (int i = 0; i < hs; i++) dq[i] += tr[i] * scale;
                }
            }
            for (int c = 0; c < jn; c++) {
                float *dk = dkb + (size_t)(j0 + c) * C3, *dv = dvb + (size_t)(j0 + c) * C3;
                const float *ka = dka + (size_t)c * hsp, *va = dva + (size_t)c * hsp;
                if (c + ATT_PFW < jn) /* rows C3 apart: the prefetchers do not follow */
                    for (int i = 0; i < hs; i += 16)
                        __builtin_prefetch(dk + (size_t)ATT_PFW * C3 + i, 1), __builtin_prefetch(dv + (size_t)ATT_PFW * C3 + i, 1);
#pragma omp simd
                for (int i = 0; i < hs; i++) {
                    dk[i] = ka[i] * scale;
                    dv[i] = va[i];
                }
            }
        }
        for (int t = 0; t < T && pair; t++) memcpy(dqb + (size_t)t * C3, dqa + (size_t)t * hs, sizeof(float) * hs);
    }
}
