/* The `residual` example of csl-examples, ported task by task: |b - A x|_inf on
 * 2 x 2 PEs.  Same colors (RXACT_X 8, PSUM 9, NRM 10), routes, queues
 * (out 2, 3, 4; in 5, 6, 7) and task IDs (COMP 12, REDUCE 13, DONE 14, EXIT 17)
 * as its layout.csl / residual.csl; the host part follows run.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wse/task.h"

enum { RXACT_X = 8, PSUM = 9, NRM = 10, NONE = 15 };
enum { TXACT_X_OQ = 2, TXACT_Y_OQ = 3, TXACT_NRM_OQ = 4, RXACT_X_IQ = 5, RXACT_Y_IQ = 6, RXACT_NRM_IQ = 7 };
enum { COMP = 12, REDUCE = 13, DONE = 14, EXIT = 17 };

typedef struct {
    int rx_x, tx_x, rx_y, tx_y, rx_nrm, tx_nrm; /* per-PE color parameters (15: unused) */
    float *A, *x, *y, *Ax, nrm[1], local_nrm;
    int px, py, exited;
} pe_state;

typedef struct {
    int Mt, Nt;
    pe_state pe[4];
} prog;

static pe_state *S(wse_prog *pg, int x, int y) { return &((prog *)gpt2c_wse_prog_user(pg))->pe[y * 2 + x]; }
static int MT(wse_prog *pg) { return ((prog *)gpt2c_wse_prog_user(pg))->Mt; }
static int NT(wse_prog *pg) { return ((prog *)gpt2c_wse_prog_user(pg))->Nt; }

/* task f_comp: Ax = A x (outer-product gemv: Nt SAXPYs of Mt), then y from the west or b */
static void f_comp(wse_prog *pg, int x, int y) {
    pe_state *s = S(pg, x, y);
    int Mt = MT(pg), Nt = NT(pg);
    wse_mesh *m = gpt2c_wse_prog_mesh(pg);
    gpt2c_wse_compute(m, x, y, WSE_OP_FMOVS, 1, Mt, 1, 0);
    gpt2c_wse_compute(m, x, y, WSE_OP_FMACS, Nt, Mt, 1, 0);
    for (int i = 0; i < Mt; i++) s->Ax[i] = 0;
    for (int j = 0; j < Nt; j++)
        for (int i = 0; i < Mt; i++) s->Ax[i] += s->A[j * Mt + i] * s->x[j];
    if (s->px == 0) gpt2c_wse_activate(pg, x, y, REDUCE);
    else gpt2c_wse_recv_async(pg, x, y, s->rx_y, RXACT_Y_IQ, s->y, Mt, REDUCE);
}

/* task f_reduce: y -= Ax; px 0 sends it east; px 1 takes the local norm and reduces it north */
static void f_reduce(wse_prog *pg, int x, int y) {
    pe_state *s = S(pg, x, y);
    int Mt = MT(pg);
    wse_mesh *m = gpt2c_wse_prog_mesh(pg);
    gpt2c_wse_compute(m, x, y, WSE_OP_FMACS, 1, Mt, 1, 0);
    for (int i = 0; i < Mt; i++) s->y[i] -= s->Ax[i];
    if (s->px == 0) {
        gpt2c_wse_send_async(pg, x, y, s->tx_y, TXACT_Y_OQ, s->y, Mt, EXIT);
        return;
    }
    gpt2c_wse_compute(m, x, y, WSE_OP_FMAXS, 1, Mt, 1, 0);
    s->local_nrm = 0;
    for (int i = 0; i < Mt; i++)
        if (fabsf(s->y[i]) > s->local_nrm) s->local_nrm = fabsf(s->y[i]);
    if (s->py == 0) gpt2c_wse_recv_async(pg, x, y, s->rx_nrm, RXACT_NRM_IQ, s->nrm, 1, DONE);
    else {
        gpt2c_wse_send_async(pg, x, y, s->tx_nrm, TXACT_NRM_OQ, &s->local_nrm, 1, -1); /* @fmovs */
        gpt2c_wse_activate(pg, x, y, EXIT);
    }
}

/* task f_done (P1.0): nrm = max(nrm from the south, local) */
static void f_done(wse_prog *pg, int x, int y) {
    pe_state *s = S(pg, x, y);
    if (s->nrm[0] < s->local_nrm) s->nrm[0] = s->local_nrm;
    gpt2c_wse_activate(pg, x, y, EXIT);
}

static void f_exit(wse_prog *pg, int x, int y) { S(pg, x, y)->exited = 1; }

/* fn bcast_x (the RPC): row 0 sends x south, row 1 receives it */
static void bcast_x(wse_prog *pg, int x, int y) {
    pe_state *s = S(pg, x, y);
    s->px = x;
    s->py = y;
    if (y == 0) gpt2c_wse_send_async(pg, x, y, s->tx_x, TXACT_X_OQ, s->x, NT(pg), COMP);
    else gpt2c_wse_recv_async(pg, x, y, s->rx_x, RXACT_X_IQ, s->x, NT(pg), COMP);
}

gpt2c_status gpt2c_wse_example_residual(const gpt2c_wse_params *p, int Mt, int Nt, gpt2c_wse_kernel_row *row) {
    memset(row, 0, sizeof *row);
    if (Mt < 1 || Nt < 1 || Mt > 1024 || Nt > 1024)
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: residual example: tile %dx%d out of range", Mt, Nt);
    gpt2c_wse_params q = *p;
    q.v[GPT2C_WSE_P_WIDTH] = 2;
    q.v[GPT2C_WSE_P_HEIGHT] = 2;
    wse_mesh *m;
    GPT2C_TRY(gpt2c_wse_mesh_create(&q, GPT2C_WSE_VALUES_F32, GPT2C_WSE_FLOW, &m));
    prog P;
    memset(&P, 0, sizeof P);
    P.Mt = Mt;
    P.Nt = Nt;
    wse_prog *pg = NULL;
    gpt2c_status st = gpt2c_wse_prog_create(m, &P, &pg);
    /* layout.csl: tile parameters, then the routes */
    for (int i = 0; i < 4; i++) {
        pe_state *s = &P.pe[i];
        s->rx_x = s->tx_x = s->rx_y = s->tx_y = s->rx_nrm = s->tx_nrm = NONE;
    }
    P.pe[0].tx_x = RXACT_X; P.pe[0].tx_y = PSUM;                          /* (0,0) */
    P.pe[2].rx_x = RXACT_X; P.pe[2].tx_y = PSUM;                          /* (0,1) */
    P.pe[1].tx_x = RXACT_X; P.pe[1].rx_y = PSUM; P.pe[1].rx_nrm = NRM;    /* (1,0) */
    P.pe[3].rx_x = RXACT_X; P.pe[3].rx_y = PSUM; P.pe[3].tx_nrm = NRM;    /* (1,1) */
    const unsigned R = 1u << WSE_RAMP, So = 1u << WSE_S, E = 1u << WSE_E, No = 1u << WSE_N;
    for (int x = 0; x < 2 && !st; x++) {
        st = gpt2c_wse_route(m, x, 0, RXACT_X, WSE_RAMP, So);
        if (!st) st = gpt2c_wse_route(m, x, 1, RXACT_X, WSE_N, R);
    }
    for (int y = 0; y < 2 && !st; y++) {
        st = gpt2c_wse_route(m, 0, y, PSUM, WSE_RAMP, E);
        if (!st) st = gpt2c_wse_route(m, 1, y, PSUM, WSE_W, R);
    }
    if (!st) st = gpt2c_wse_route(m, 1, 0, NRM, WSE_S, R);
    if (!st) st = gpt2c_wse_route(m, 1, 1, NRM, WSE_RAMP, No);
    for (int y = 0; y < 2 && !st; y++)
        for (int x = 0; x < 2 && !st; x++) {
            st = gpt2c_wse_bind_local(pg, x, y, COMP, f_comp);
            if (!st) st = gpt2c_wse_bind_local(pg, x, y, REDUCE, f_reduce);
            if (!st) st = gpt2c_wse_bind_local(pg, x, y, DONE, f_done);
            if (!st) st = gpt2c_wse_bind_local(pg, x, y, EXIT, f_exit);
            uint32_t off[5];
            const char *what[5] = {"A", "x", "y", "Ax", "ws"};
            size_t sz[5] = {(size_t)Mt * Nt, (size_t)Nt, (size_t)Mt, (size_t)Mt, (size_t)Mt};
            for (int k = 0; k < 5 && !st; k++) st = gpt2c_wse_alloc(m, x, y, sz[k], what[k], &off[k]);
            if (!st) st = gpt2c_wse_mesh_commit(m);
            if (!st) {
                pe_state *s = &P.pe[y * 2 + x];
                float *mem = wse_at(m, x, y)->mem;
                s->A = mem + off[0];
                s->x = mem + off[1];
                s->y = mem + off[2];
                s->Ax = mem + off[3];
            }
        }
    /* run.py: A (M x N) to every PE (column-major tiles), x to row 0, b to column 0 */
    int M = 2 * Mt, N = 2 * Nt;
    float *A = malloc(sizeof(float) * (size_t)M * N), *X = malloc(sizeof(float) * (size_t)N),
          *B = malloc(sizeof(float) * (size_t)M);
    if (!st && (!A || !X || !B)) st = gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
    if (!st) {
        uint32_t seed = 2024;
        for (int i = 0; i < M * N; i++) { seed = seed * 1664525u + 1013904223u; A[i] = (float)((seed >> 8) & 0xffff) / 65536.0f; }
        for (int i = 0; i < N; i++) { seed = seed * 1664525u + 1013904223u; X[i] = (float)((seed >> 8) & 0xffff) / 65536.0f; }
        for (int i = 0; i < M; i++) { seed = seed * 1664525u + 1013904223u; B[i] = (float)((seed >> 8) & 0xffff) / 65536.0f; }
        for (int py = 0; py < 2; py++)
            for (int px = 0; px < 2; px++) {
                pe_state *s = &P.pe[py * 2 + px];
                for (int j = 0; j < Nt; j++)
                    for (int i = 0; i < Mt; i++) s->A[j * Mt + i] = A[(size_t)(py * Mt + i) * N + px * Nt + j];
                if (py == 0) memcpy(s->x, X + px * Nt, sizeof(float) * (size_t)Nt);
                if (px == 0) memcpy(s->y, B + py * Mt, sizeof(float) * (size_t)Mt);
            }
        st = gpt2c_wse_prog_launch(pg, bcast_x);
    }
    if (!st) {
        for (int i = 0; i < 4; i++)
            if (!P.pe[i].exited)
                st = gpt2c_fail(GPT2C_ERR_ARG, "wse: residual example: PE (%d,%d) never reached f_exit", i % 2, i / 2);
    }
    if (!st) {
        double ref = 0;
        for (int i = 0; i < M; i++) {
            double r = B[i];
            for (int j = 0; j < N; j++) r -= (double)A[(size_t)i * N + j] * X[j];
            if (fabs(r) > ref) ref = fabs(r);
        }
        row->max_rel_err = fabs(P.pe[1].nrm[0] - ref) / (ref > 0 ? ref : 1);
        for (int i = 0; i < 4; i++) {
            const wse_pe *pe = &m->pe[i];
            if (pe->t_ce > row->cycles) row->cycles = pe->t_ce;
            if (pe->busy > row->compute) row->compute = pe->busy;
            if (gpt2c_wse_colors_used(pe) > row->colors_max) row->colors_max = gpt2c_wse_colors_used(pe);
        }
        row->comm = row->cycles > row->compute ? row->cycles - row->compute : 0;
        row->max_hops_per_step = 1;
    }
    free(A); free(X); free(B);
    gpt2c_wse_prog_free(pg);
    gpt2c_wse_mesh_free(m);
    return st;
}
