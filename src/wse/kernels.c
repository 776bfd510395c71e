/* Kernel studies on a bare P x P grid: SUMMA (the gemm-collectives_2d example)
 * against MeshGEMM (WaferLLM: Cannon's algorithm on interleaved rings), and
 * the line reductions (chain, tree, groups) against each other. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wse/coll.h"

static gpt2c_status grid_mesh(const gpt2c_wse_params *p, gpt2c_wse_fidelity f, int P, int values, wse_mesh **m) {
    gpt2c_wse_params q = *p;
    if (P < 1 || P > 1024) return gpt2c_fail(GPT2C_ERR_RANGE, "wse: grid %d: expected 1..1024", P);
    q.v[GPT2C_WSE_P_WIDTH] = P;
    q.v[GPT2C_WSE_P_HEIGHT] = P;
    return gpt2c_wse_mesh_create(&q, values ? GPT2C_WSE_VALUES_F32 : GPT2C_WSE_VALUES_NONE, f, m);
}

static void finish(wse_mesh *m, gpt2c_wse_kernel_row *row) {
    for (size_t i = 0; i < (size_t)m->W * m->H; i++) {
        const wse_pe *pe = &m->pe[i];
        if (pe->t_ce > row->cycles) row->cycles = pe->t_ce;
        if (pe->busy > row->compute) row->compute = pe->busy;
        if (gpt2c_wse_colors_used(pe) > row->colors_max) row->colors_max = gpt2c_wse_colors_used(pe);
    }
    row->comm = row->cycles > row->compute ? row->cycles - row->compute : 0;
}

static float lcg(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 65536.0f - 0.5f;
}

/* the interleaved ring on a line of P: 0, 2, 4, ..., then the odds descending */
static void ring(int P, int *pos) {
    int k = 0;
    for (int x = 0; x < P; x += 2) pos[k++] = x;
    for (int x = (P - 1) | 1; x >= 1; x -= 2)
        if (x < P) pos[k++] = x;
}

gpt2c_status gpt2c_wse_gemm(const gpt2c_wse_params *p, gpt2c_wse_fidelity f, const char *algo, int P, int t,
                            int values, gpt2c_wse_kernel_row *row) {
    memset(row, 0, sizeof *row);
    row->max_rel_err = -1;
    int mesh_gemm;
    if (!strcmp(algo, "summa")) mesh_gemm = 0;
    else if (!strcmp(algo, "meshgemm")) mesh_gemm = 1;
    else return gpt2c_fail(GPT2C_ERR_ARG, "wse: GEMM algorithm '%s': expected summa or meshgemm", algo);
    if (t < 1 || t > 64) return gpt2c_fail(GPT2C_ERR_RANGE, "wse: tile %d: expected 1..64", t);
    wse_mesh *m;
    GPT2C_TRY(grid_mesh(p, f, P, values, &m));
    m->switched |= (1u << 0) | (1u << 4) | (3u << 8); /* roots and ring directions change: switches */
    size_t tt = (size_t)t * t, N = (size_t)P * t;
    uint32_t oA, oB, oC, oA2, oB2;
    gpt2c_status st = GPT2C_OK;
    for (int y = 0; y < P && !st; y++)
        for (int x = 0; x < P && !st; x++) {
            st = gpt2c_wse_alloc(m, x, y, tt, "A tile", &oA);
            if (!st) st = gpt2c_wse_alloc(m, x, y, tt, "B tile", &oB);
            if (!st) st = gpt2c_wse_alloc(m, x, y, tt, "C tile", &oC);
            if (!st) st = gpt2c_wse_alloc(m, x, y, tt, "A buffer", &oA2);
            if (!st) st = gpt2c_wse_alloc(m, x, y, tt, "B buffer", &oB2);
        }
    /* gemm-collectives_2d's resources on every PE: tasks 8/9 (x entry), 10/11 (y entry),
     * EXIT 12, compute 13, x_done 14, y_done 15 */
    for (int y = 0; y < P && !st && !mesh_gemm; y++)
        for (int x = 0; x < P && !st; x++)
            for (int id = 8; id <= 15 && !st; id++) st = gpt2c_wse_bind_task(m, x, y, id, 'l');
    if (!st) st = gpt2c_wse_mesh_commit(m);
    float *A = NULL, *B = NULL;
    int *pos = malloc(sizeof(int) * (size_t)P), *inv = malloc(sizeof(int) * (size_t)P);
    uint64_t *arr = malloc(sizeof(uint64_t) * (size_t)P * P * 2 * 2 + 1);
    wse_xfer *xs = malloc(sizeof *xs * (size_t)P * P * 2 + 1);
    if (values) {
        A = malloc(sizeof(float) * N * N);
        B = malloc(sizeof(float) * N * N);
    }
    if (!st && (!pos || !inv || !arr || !xs || (values && (!A || !B))))
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for a GEMM study");
    if (!st) {
        ring(P, pos);
        for (int k = 0; k < P; k++) inv[pos[k]] = k;
    }
    if (!st && values) {
        uint32_t s = 12345;
        for (size_t i = 0; i < N * N; i++) A[i] = lcg(&s);
        for (size_t i = 0; i < N * N; i++) B[i] = lcg(&s);
        /* host layout: SUMMA's PE (x=j, y=i) holds A(i, j), B(i, j) (column-major tiles, as run.py);
         * MeshGEMM's logical (i, j) = physical (pos[j], pos[i]) holds A(i, (i+j)%P), B((i+j)%P, j) */
        for (int y = 0; y < P; y++)
            for (int x = 0; x < P; x++) {
                wse_pe *pe = wse_at(m, x, y);
                int i = mesh_gemm ? inv[y] : y, j = mesh_gemm ? inv[x] : x;
                int ai = i, aj = mesh_gemm ? (i + j) % P : j, bi = mesh_gemm ? (i + j) % P : i, bj = j;
                for (int c = 0; c < t; c++)
                    for (int r = 0; r < t; r++) {
                        pe->mem[oA + (size_t)c * t + r] = A[((size_t)ai * t + r) * N + (size_t)aj * t + c];
                        pe->mem[oB + (size_t)c * t + r] = B[((size_t)bi * t + r) * N + (size_t)bj * t + c];
                    }
            }
    }
    uint64_t setup = (uint64_t)p->v[GPT2C_WSE_P_SETUP];
    for (int s = 0; s < P && !st; s++) {
        int nx = 0;
        if (!mesh_gemm) {
            /* column s broadcasts A along rows, row s broadcasts B down columns */
            wse_line *l = malloc(sizeof *l * (size_t)P * 2);
            if (!l) { st = gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory"); break; }
            for (int i = 0; i < P; i++) {
                l[i] = (wse_line){0, i, WSE_E, P, s};
                l[P + i] = (wse_line){i, 0, WSE_S, P, s};
            }
            uint64_t t_start = 0;
            for (int y = 0; y < P; y++)
                for (int x = 0; x < P; x++) if (wse_at(m, x, y)->t_ce > t_start) t_start = wse_at(m, x, y)->t_ce;
            st = gpt2c_wse_coll_bcast(m, l, P, (long)tt, 0);
            if (!st) st = gpt2c_wse_coll_bcast(m, l + P, P, (long)tt, 4);
            free(l);
            /* the broadcasts' microthreads hold queues 2 (x in), 4 (x out), 3 (y in), 5 (y out) */
            for (int y = 0; y < P && !st; y++)
                for (int x = 0; x < P && !st; x++) {
                    uint64_t t_end = wse_at(m, x, y)->t_ce;
                    st = gpt2c_wse_queue_use(m, x, y, x == s ? 4 : 2, x == s, t_start, t_end);
                    if (!st) st = gpt2c_wse_queue_use(m, x, y, y == s ? 5 : 3, y == s, t_start, t_end);
                }
            if (st) break;
            int hops = s > P - 1 - s ? s : P - 1 - s;
            if (hops > row->max_hops_per_step) row->max_hops_per_step = hops;
            for (int y = 0; y < P && !st; y++)
                for (int x = 0; x < P; x++) {
                    gpt2c_wse_compute(m, x, y, WSE_OP_FMACS, (long)t * t, t, 1, 0); /* Kt*Nt SAXPYs of Mt */
                    if (!values) continue;
                    wse_pe *pe = wse_at(m, x, y);
                    const float *a = wse_at(m, s, y)->mem + oA, *b = wse_at(m, x, s)->mem + oB;
                    for (int j = 0; j < t; j++)
                        for (int k = 0; k < t; k++)
                            for (int i = 0; i < t; i++) pe->mem[oC + (size_t)j * t + i] += a[(size_t)k * t + i] * b[(size_t)j * t + k];
                }
            continue;
        }
        /* MeshGEMM: send this step's tiles to the ring predecessors (double buffers), compute, then wait */
        if (s < P - 1) {
            size_t off = 0;
            for (int y = 0; y < P; y++)
                for (int x = 0; x < P; x++) {
                    uint64_t t0 = wse_at(m, x, y)->t_ce + setup;
                    int dx = pos[(inv[x] + P - 1) % P] - x, dy = pos[(inv[y] + P - 1) % P] - y;
                    if (abs(dx) > row->max_hops_per_step) row->max_hops_per_step = abs(dx);
                    if (abs(dy) > row->max_hops_per_step) row->max_hops_per_step = abs(dy);
                    if (dx) {
                        xs[nx++] = (wse_xfer){.x = x, .y = y, .dir1 = dx > 0 ? WSE_E : WSE_W, .hops1 = abs(dx),
                                              .color1 = dx > 0 ? 8 : 9, .color2 = dx > 0 ? 8 : 9, .n = (long)tt,
                                              .t0 = t0, .arrive = arr + off};
                        off += (size_t)abs(dx);
                    }
                    if (dy) {
                        xs[nx++] = (wse_xfer){.x = x, .y = y, .dir1 = dy > 0 ? WSE_S : WSE_N, .hops1 = abs(dy),
                                              .color1 = dy > 0 ? 4 : 0, .color2 = dy > 0 ? 4 : 0, .n = (long)tt,
                                              .t0 = t0, .arrive = arr + off};
                        off += (size_t)abs(dy);
                    }
                }
            m->switched |= (1u << 9);
            st = gpt2c_wse_fabric_run(m, xs, nx);
            if (st) break;
            for (int y = 0; y < P; y++)
                for (int x = 0; x < P; x++) gpt2c_wse_compute(m, x, y, WSE_OP_SEND, 2, 0, 1, 0);
        }
        for (int y = 0; y < P; y++)
            for (int x = 0; x < P; x++) {
                gpt2c_wse_compute(m, x, y, WSE_OP_FMACS, (long)t * t, t, 1, 0);
                if (!values) continue;
                wse_pe *pe = wse_at(m, x, y);
                for (int j = 0; j < t; j++)
                    for (int k = 0; k < t; k++)
                        for (int i = 0; i < t; i++)
                            pe->mem[oC + (size_t)j * t + i] += pe->mem[oA + (size_t)k * t + i] * pe->mem[oB + (size_t)j * t + k];
            }
        if (s < P - 1) {
            for (int k = 0; k < nx; k++) {
                int ex = xs[k].x + (xs[k].dir1 == WSE_E ? xs[k].hops1 : xs[k].dir1 == WSE_W ? -xs[k].hops1 : 0);
                int ey = xs[k].y + (xs[k].dir1 == WSE_S ? xs[k].hops1 : xs[k].dir1 == WSE_N ? -xs[k].hops1 : 0);
                gpt2c_wse_wait(m, ex, ey, xs[k].arrive[xs[k].hops1 - 1]);
            }
            if (values) { /* the shift: A to the west ring neighbour, B to the north one */
                for (int y = 0; y < P; y++)
                    for (int x = 0; x < P; x++) {
                        wse_pe *pe = wse_at(m, x, y);
                        const wse_pe *ea = wse_at(m, pos[(inv[x] + 1) % P], y), *eb = wse_at(m, x, pos[(inv[y] + 1) % P]);
                        memcpy(pe->mem + oA2, ea->mem + oA, tt * sizeof(float));
                        memcpy(pe->mem + oB2, eb->mem + oB, tt * sizeof(float));
                    }
                for (int y = 0; y < P; y++)
                    for (int x = 0; x < P; x++) {
                        wse_pe *pe = wse_at(m, x, y);
                        memcpy(pe->mem + oA, pe->mem + oA2, tt * sizeof(float));
                        memcpy(pe->mem + oB, pe->mem + oB2, tt * sizeof(float));
                    }
            }
        }
    }
    if (!st && values) {
        double num = 0, den = 0;
        for (int y = 0; y < P; y++)
            for (int x = 0; x < P; x++) {
                const wse_pe *pe = wse_at(m, x, y);
                int i = mesh_gemm ? inv[y] : y, j = mesh_gemm ? inv[x] : x;
                for (int c = 0; c < t; c++)
                    for (int r = 0; r < t; r++) {
                        double ref = 0;
                        size_t gr = (size_t)i * t + r, gc = (size_t)j * t + c;
                        for (size_t k = 0; k < N; k++) ref += (double)A[gr * N + k] * B[k * N + gc];
                        double d = fabs(pe->mem[oC + (size_t)c * t + r] - ref);
                        if (d > num) num = d;
                        if (fabs(ref) > den) den = fabs(ref);
                    }
            }
        row->max_rel_err = den > 0 ? num / den : num;
    }
    if (!st) finish(m, row);
    free(A); free(B); free(pos); free(inv); free(arr); free(xs);
    gpt2c_wse_mesh_free(m);
    return st;
}

gpt2c_status gpt2c_wse_reduce_study(const gpt2c_wse_params *p, gpt2c_wse_fidelity f, gpt2c_wse_reduce algo,
                                    int groups, int P, long n, gpt2c_wse_kernel_row *row) {
    memset(row, 0, sizeof *row);
    row->max_rel_err = -1;
    gpt2c_wse_params q = *p;
    if (P < 2 || P > 100000) return gpt2c_fail(GPT2C_ERR_RANGE, "wse: line of %d PEs: expected 2..100000", P);
    q.v[GPT2C_WSE_P_WIDTH] = P;
    q.v[GPT2C_WSE_P_HEIGHT] = 1;
    wse_mesh *m;
    GPT2C_TRY(gpt2c_wse_mesh_create(&q, GPT2C_WSE_VALUES_NONE, f, &m));
    wse_line l = {0, 0, WSE_E, P, P / 2};
    gpt2c_status st = gpt2c_wse_coll_reduce(m, &l, 1, n, algo, groups, 2, 3, 4, 5);
    row->max_hops_per_step = P / 2;
    if (!st) finish(m, row);
    gpt2c_wse_mesh_free(m);
    return st;
}

/* gemv-collectives_2d: y = A x + b on a P x P grid of Mt x Nt tiles.  x and b start on
 * PE (0,0); b is scattered down column 0, x along row 0 and then broadcast down the
 * columns; each PE does Nt fp32 SAXPYs of Mt (column-major tile); rows reduce_fadds into
 * the east column, which gathers y down to its last PE. */
gpt2c_status gpt2c_wse_gemv_example(const gpt2c_wse_params *p, gpt2c_wse_fidelity f, int P, int Mt, int Nt,
                                    gpt2c_wse_kernel_row *row) {
    memset(row, 0, sizeof *row);
    if (Mt < 1 || Nt < 1 || Mt > 256 || Nt > 256) return gpt2c_fail(GPT2C_ERR_RANGE, "wse: GEMV tile %dx%d", Mt, Nt);
    wse_mesh *m;
    GPT2C_TRY(grid_mesh(p, f, P, 1, &m));
    m->switched |= (1u << 0) | (1u << 1) | (1u << 4) | (1u << 5); /* <collectives_2d>: any root, 2 colors per axis */
    size_t M = (size_t)P * Mt, N = (size_t)P * Nt;
    uint32_t oA, ox, oy, ob = 0;
    gpt2c_status st = GPT2C_OK;
    for (int y = 0; y < P && !st; y++)
        for (int x = 0; x < P && !st; x++) {
            st = gpt2c_wse_alloc(m, x, y, (size_t)Mt * Nt, "A tile", &oA);
            if (!st) st = gpt2c_wse_alloc(m, x, y, (size_t)Nt, "x block", &ox);
            if (!st) st = gpt2c_wse_alloc(m, x, y, (size_t)Mt, "y block", &oy);
            if (!st && x == 0) st = gpt2c_wse_alloc(m, x, y, (size_t)Mt, "b block", &ob);
        }
    if (!st) st = gpt2c_wse_mesh_commit(m);
    float *A = malloc(sizeof(float) * M * N), *X = malloc(sizeof(float) * N), *Bv = malloc(sizeof(float) * M);
    wse_p2p *v = malloc(sizeof *v * (size_t)P * 2 + 1);
    wse_line *l = malloc(sizeof *l * (size_t)P + 1);
    if (!st && (!A || !X || !Bv || !v || !l)) st = gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory for the GEMV example");
    if (!st) {
        uint32_t s = 777;
        for (size_t i = 0; i < M * N; i++) A[i] = lcg(&s);
        for (size_t i = 0; i < N; i++) X[i] = lcg(&s);
        for (size_t i = 0; i < M; i++) Bv[i] = lcg(&s);
        for (int y = 0; y < P; y++)
            for (int x = 0; x < P; x++)
                for (int c = 0; c < Nt; c++)
                    for (int r = 0; r < Mt; r++)
                        wse_at(m, x, y)->mem[oA + (size_t)c * Mt + r] = A[((size_t)y * Mt + r) * N + (size_t)x * Nt + c];
        /* scatter b down column 0 and x along row 0 (PE (0,0) keeps its own blocks) */
        int nv = 0;
        for (int i = 1; i < P; i++) {
            v[nv++] = (wse_p2p){0, 0, 0, i, Mt};
            v[nv++] = (wse_p2p){0, 0, i, 0, Nt};
        }
        st = gpt2c_wse_coll_p2p_many(m, v, nv, 4);
        for (int i = 0; i < P; i++) {
            memcpy(wse_at(m, 0, i)->mem + ob, Bv + (size_t)i * Mt, sizeof(float) * (size_t)Mt);
            memcpy(wse_at(m, i, 0)->mem + ox, X + (size_t)i * Nt, sizeof(float) * (size_t)Nt);
        }
    }
    if (!st) { /* x down the columns */
        for (int c = 0; c < P; c++) l[c] = (wse_line){c, 0, WSE_S, P, 0};
        st = gpt2c_wse_coll_bcast(m, l, P, Nt, 5);
        for (int y = 1; y < P; y++)
            for (int x = 0; x < P; x++)
                memcpy(wse_at(m, x, y)->mem + ox, wse_at(m, x, 0)->mem + ox, sizeof(float) * (size_t)Nt);
    }
    if (!st) {
        for (int y = 0; y < P; y++)
            for (int x = 0; x < P; x++) {
                wse_pe *pe = wse_at(m, x, y);
                gpt2c_wse_compute(m, x, y, WSE_OP_FMACS, Nt, Mt, 1, 0);
                float *yy = pe->mem + oy;
                for (int r = 0; r < Mt; r++) yy[r] = x == 0 ? pe->mem[ob + r] : 0.0f;
                for (int c = 0; c < Nt; c++)
                    for (int r = 0; r < Mt; r++) yy[r] += pe->mem[oA + (size_t)c * Mt + r] * pe->mem[ox + c];
            }
        for (int r = 0; r < P; r++) l[r] = (wse_line){0, r, WSE_E, P, P - 1};
        st = gpt2c_wse_coll_reduce(m, l, P, Mt, GPT2C_WSE_CHAIN, 1, 0, 1, 0, 1);
        for (int y = 0; y < P; y++)
            for (int x = 0; x < P - 1; x++)
                for (int r = 0; r < Mt; r++) wse_at(m, P - 1, y)->mem[oy + r] += wse_at(m, x, y)->mem[oy + r];
    }
    if (!st) { /* gather down the east column */
        int nv = 0;
        for (int i = 0; i < P - 1; i++) v[nv++] = (wse_p2p){P - 1, i, P - 1, P - 1, Mt};
        st = gpt2c_wse_coll_p2p_many(m, v, nv, 4);
    }
    if (!st) {
        double num = 0, den = 0;
        for (size_t i = 0; i < M; i++) {
            double ref = Bv[i];
            for (size_t k = 0; k < N; k++) ref += (double)A[i * N + k] * X[k];
            double d = fabs(wse_at(m, P - 1, (int)(i / (size_t)Mt))->mem[oy + i % (size_t)Mt] - ref);
            if (d > num) num = d;
            if (fabs(ref) > den) den = fabs(ref);
        }
        row->max_rel_err = den > 0 ? num / den : num;
        row->max_hops_per_step = 2 * (P - 1);
        finish(m, row);
    }
    free(A); free(X); free(Bv); free(v); free(l);
    gpt2c_wse_mesh_free(m);
    return st;
}
