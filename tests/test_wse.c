/* gpt2c wse: resource limits, cost calibration, fabric microbenchmarks at both
 * fidelities, and GPT-2 on the mesh against the ref kernels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/wse.h"
#include "wse/coll.h"
#include "wse/task.h"
#include "wse/wse_internal.h"
#include "model/model_internal.h"

static int fails = 0;
#define CHECK(c, ...)                                                      \
    do {                                                                   \
        if (!(c)) {                                                        \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);           \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
            fails++;                                                       \
        }                                                                  \
    } while (0)

static wse_mesh *mesh(int W, int H, gpt2c_wse_fidelity f, double hop) {
    gpt2c_wse_params p;
    gpt2c_wse_params_preset("wse2", &p);
    p.v[GPT2C_WSE_P_WIDTH] = W;
    p.v[GPT2C_WSE_P_HEIGHT] = H;
    p.v[GPT2C_WSE_P_HOP] = hop;
    wse_mesh *m = NULL;
    if (gpt2c_wse_mesh_create(&p, GPT2C_WSE_VALUES_NONE, f, &m)) { fprintf(stderr, "mesh: %s\n", gpt2c_errmsg()); exit(1); }
    return m;
}

static void expect_err(gpt2c_status st, const char *what, const char *needle) {
    CHECK(st != GPT2C_OK, "%s: accepted", what);
    if (st != GPT2C_OK) {
        CHECK(strstr(gpt2c_errmsg(), "PE (") && strstr(gpt2c_errmsg(), needle), "%s: message '%s' lacks PE or '%s'",
              what, gpt2c_errmsg(), needle);
        CHECK(!strchr(gpt2c_errmsg(), '\n'), "%s: message is not one line", what);
    }
}

static void test_limits(void) {
    wse_mesh *m = mesh(4, 4, GPT2C_WSE_FLOW, 1);
    uint32_t off;
    expect_err(gpt2c_wse_route(m, 1, 2, 24, WSE_RAMP, 1u << WSE_E), "a 25th color", "color 24");
    expect_err(gpt2c_wse_route(m, 1, 2, 21, WSE_RAMP, 1u << WSE_E), "a reserved color", "reserved");
    CHECK(gpt2c_wse_route(m, 1, 2, 5, WSE_W, 1u << WSE_E) == GPT2C_OK, "a route: %s", gpt2c_errmsg());
    CHECK(gpt2c_wse_route(m, 1, 2, 5, WSE_W, 1u << WSE_RAMP) == GPT2C_OK, "same upstream, more outputs: %s", gpt2c_errmsg());
    expect_err(gpt2c_wse_route(m, 1, 2, 5, WSE_N, 1u << WSE_E), "two upstreams", "two upstreams");
    CHECK(gpt2c_wse_queue_use(m, 0, 0, 2, 1, 0, 100) == GPT2C_OK, "a queue: %s", gpt2c_errmsg());
    expect_err(gpt2c_wse_queue_use(m, 0, 0, 2, 1, 50, 120), "a shared queue", "queue 2");
    CHECK(gpt2c_wse_queue_use(m, 0, 0, 2, 1, 100, 120) == GPT2C_OK, "a queue after the first op: %s", gpt2c_errmsg());
    expect_err(gpt2c_wse_queue_use(m, 0, 0, 6, 1, 0, 1), "WSE-2 output queue 6", "queue 6");
    expect_err(gpt2c_wse_bind_task(m, 3, 3, 28, 'l'), "a reserved task", "reserved");
    CHECK(gpt2c_wse_bind_task(m, 3, 3, 8, 'l') == GPT2C_OK, "a task: %s", gpt2c_errmsg());
    expect_err(gpt2c_wse_bind_task(m, 3, 3, 8, 'l'), "a task bound twice", "twice");
    CHECK(gpt2c_wse_alloc(m, 2, 1, 10000, "tile A", &off) == GPT2C_OK, "40 KB: %s", gpt2c_errmsg());
    expect_err(gpt2c_wse_alloc(m, 2, 1, 1000, "tile B", &off), "SRAM over budget", "tile B");
    gpt2c_wse_mesh_free(m);
}

static void noop_task(wse_prog *pg, int x, int y) { (void)pg; (void)x; (void)y; }
static float task_buf[4];
static void send_east(wse_prog *pg, int x, int y) {
    if (x == 0 && y == 0) gpt2c_wse_send_async(pg, 0, 0, 3, 2, task_buf, 4, -1);
}

/* the task layer: reserved and unbound task IDs, a wavelet against its route */
static void test_tasks(void) {
    wse_mesh *m = mesh(2, 1, GPT2C_WSE_FLOW, 1);
    wse_prog *pg;
    CHECK(gpt2c_wse_prog_create(m, NULL, &pg) == GPT2C_OK, "prog");
    expect_err(gpt2c_wse_bind_local(pg, 0, 0, 30, noop_task), "a reserved task ID", "reserved");
    CHECK(gpt2c_wse_route(m, 0, 0, 3, WSE_RAMP, 1u << WSE_E) == GPT2C_OK, "route");
    CHECK(gpt2c_wse_route(m, 1, 0, 3, WSE_N, 1u << WSE_RAMP) == GPT2C_OK, "route");
    expect_err(gpt2c_wse_prog_launch(pg, send_east), "a wavelet from the west on a color routed from the north", "upstream");
    gpt2c_wse_prog_free(pg);
    gpt2c_wse_mesh_free(m);
}

static void test_op_costs(void) {
    wse_mesh *m = mesh(2, 2, GPT2C_WSE_FLOW, 1);
    const uint64_t setup = 16;
    struct { wse_op op; long n; int stride; uint64_t want; } cases[] = {
        {WSE_OP_FMACS, 100, 1, setup + 100},   /* fp32 FMA: 1/cycle [est] */
        {WSE_OP_FADDS, 101, 1, setup + 51},    /* @fadds width 2 */
        {WSE_OP_FMACH, 101, 1, setup + 26},    /* @fmach width 4 */
        {WSE_OP_FMACH, 101, 9, setup + 51},    /* stride % 8 == 1: width 2 */
        {WSE_OP_FMACH, 101, 16, setup + 101},  /* stride % 8 == 0: width 1 */
        {WSE_OP_FMAXH, 10, 1, setup + 10},     /* @fmaxh width 1 on WSE-2 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint64_t t0 = wse_at(m, 1, 1)->t_ce;
        uint64_t t1 = gpt2c_wse_compute(m, 1, 1, cases[i].op, 1, cases[i].n, cases[i].stride, 0);
        CHECK(t1 - t0 == cases[i].want, "op case %zu: %llu cycles, want %llu", i, (unsigned long long)(t1 - t0),
              (unsigned long long)cases[i].want);
    }
    m->p.v[GPT2C_WSE_P_FMA32] = 0.5;
    CHECK(gpt2c_wse_op_cycles(m, WSE_OP_FMACS, 100, 1) == setup + 200, "fma32_rate 0.5");
    gpt2c_wse_mesh_free(m);
}

/* one stream of n wavelets over h hops east from (0,0): tail arrival */
static uint64_t stream(gpt2c_wse_fidelity f, double hop, int h, long n) {
    wse_mesh *m = mesh(h + 1, 1, f, hop);
    uint64_t arr[256];
    wse_xfer x = {.x = 0, .y = 0, .dir1 = WSE_E, .hops1 = h, .color1 = 0, .color2 = 0, .n = n, .t0 = 0, .arrive = arr};
    CHECK(gpt2c_wse_fabric_run(m, &x, 1) == GPT2C_OK, "stream: %s", gpt2c_errmsg());
    uint64_t t = arr[h - 1];
    gpt2c_wse_mesh_free(m);
    return t;
}

/* two streams of n wavelets: sharing the link (0,0)->(1,0), or on disjoint rows */
static uint64_t two_streams(gpt2c_wse_fidelity f, int shared, long n) {
    wse_mesh *m = mesh(8, 2, f, 1);
    uint64_t a[8], b[8];
    wse_xfer x[2] = {
        {.x = 0, .y = 0, .dir1 = WSE_E, .hops1 = 4, .color1 = 0, .color2 = 0, .n = n, .arrive = a},
        {.x = 0, .y = shared ? 0 : 1, .dir1 = WSE_E, .hops1 = 4, .color1 = 1, .color2 = 1, .n = n, .arrive = b}};
    CHECK(gpt2c_wse_fabric_run(m, x, 2) == GPT2C_OK, "two streams: %s", gpt2c_errmsg());
    uint64_t t = a[3] > b[3] ? a[3] : b[3];
    gpt2c_wse_mesh_free(m);
    return t;
}

static int within(double a, double b, double tol) { return fabs(a - b) <= tol * (a > b ? a : b); }

/* brief check (b): a row broadcast of n wavelets over h hops costs setup + h*hop + n (- 1: the tail) */
static void test_bcast_cost(void) {
    for (int f = 0; f < 2; f++)
        for (int hop = 1; hop <= 2; hop++) {
            wse_mesh *m = mesh(12, 1, f ? GPT2C_WSE_WAVELET : GPT2C_WSE_FLOW, hop);
            wse_line l = {0, 0, WSE_E, 12, 0};
            CHECK(gpt2c_wse_coll_bcast(m, &l, 1, 300, 0) == GPT2C_OK, "bcast: %s", gpt2c_errmsg());
            uint64_t want = 16 + 11 * (uint64_t)hop + 300 - 1;
            CHECK(wse_at(m, 11, 0)->t_ce == want, "fidelity %d hop %d: broadcast took %llu, want %llu", f, hop,
                  (unsigned long long)wse_at(m, 11, 0)->t_ce, (unsigned long long)want);
            gpt2c_wse_mesh_free(m);
        }
}

static void test_fabric(void) {
    for (int f = 0; f < 2; f++) {
        gpt2c_wse_fidelity fid = f ? GPT2C_WSE_WAVELET : GPT2C_WSE_FLOW;
        for (int hop = 1; hop <= 2; hop++) {
            /* latency linear in hops, slope `hop`; then 1 wavelet per cycle */
            uint64_t t5 = stream(fid, hop, 5, 1), t20 = stream(fid, hop, 20, 1);
            CHECK(t20 - t5 == (uint64_t)(15 * hop), "fidelity %d hop %d: slope %llu over 15 hops", f, hop,
                  (unsigned long long)(t20 - t5));
            uint64_t big = stream(fid, hop, 10, 1001);
            CHECK(big == (uint64_t)(10 * hop + 1000), "fidelity %d: 1001 wavelets over 10 hops took %llu", f,
                  (unsigned long long)big);
        }
        uint64_t one = stream(fid, 1, 4, 500), shared = two_streams(fid, 1, 500), disjoint = two_streams(fid, 0, 500);
        CHECK(within((double)shared, 2.0 * 500 + 4, 0.02), "fidelity %d: two streams on a link took %llu, want ~%d", f,
              (unsigned long long)shared, 2 * 500 + 4);
        CHECK(disjoint == one, "fidelity %d: disjoint streams interact (%llu vs %llu)", f, (unsigned long long)disjoint,
              (unsigned long long)one);
    }
}

/* the calibration kernels at both fidelities: row broadcasts, chain reduce, and
 * a contended pattern (all rows broadcast, then every column reduces) */
static uint64_t calib(gpt2c_wse_fidelity f, int P, gpt2c_wse_reduce algo) {
    wse_mesh *m = mesh(P, P, f, 1);
    wse_line rows[64], cols[64];
    for (int i = 0; i < P; i++) {
        rows[i] = (wse_line){0, i, WSE_E, P, i};
        cols[i] = (wse_line){i, 0, WSE_S, P, P / 2};
    }
    CHECK(gpt2c_wse_coll_bcast(m, rows, P, 200, 0) == GPT2C_OK, "bcast: %s", gpt2c_errmsg());
    CHECK(gpt2c_wse_coll_reduce(m, cols, P, 200, algo, 4, 2, 3, 4, 5) == GPT2C_OK, "reduce: %s", gpt2c_errmsg());
    /* and point-to-point streams crossing each other's paths */
    wse_p2p v[64];
    for (int i = 0; i < P; i++) v[i] = (wse_p2p){i, i, P - 1 - i, (i + P / 2) % P, 100};
    m->switched |= 3u << 6;
    CHECK(gpt2c_wse_coll_p2p_many(m, v, P, 6) == GPT2C_OK, "p2p: %s", gpt2c_errmsg());
    uint64_t t = 0;
    for (int i = 0; i < P * P; i++) if (m->pe[i].t_ce > t) t = m->pe[i].t_ce;
    gpt2c_wse_mesh_free(m);
    return t;
}

static void test_fidelity_agreement(void) {
    int Ps[3] = {4, 16, 32};
    for (int i = 0; i < 3; i++)
        for (int a = 0; a < 3; a++) {
            uint64_t fl = calib(GPT2C_WSE_FLOW, Ps[i], (gpt2c_wse_reduce)a);
            uint64_t wv = calib(GPT2C_WSE_WAVELET, Ps[i], (gpt2c_wse_reduce)a);
            CHECK(within((double)fl, (double)wv, 0.05), "P=%d reduce %d: flow %llu vs wavelet %llu differ > 5%%",
                  Ps[i], a, (unsigned long long)fl, (unsigned long long)wv);
        }
}

/* acceptance 6: SUMMA vs MeshGEMM; 7: chain vs tree vs groups */
static void test_gemm_and_reductions(void) {
    gpt2c_wse_params p;
    gpt2c_wse_params_preset("wse2", &p);
    uint64_t summa_comm[3], mesh_comm[3];
    int Ps[3] = {4, 8, 16};
    for (int i = 0; i < 3; i++) {
        gpt2c_wse_kernel_row s, g, sw, gw;
        CHECK(gpt2c_wse_gemm(&p, GPT2C_WSE_FLOW, "summa", Ps[i], 14, Ps[i] <= 8, &s) == GPT2C_OK, "summa: %s", gpt2c_errmsg());
        CHECK(gpt2c_wse_gemm(&p, GPT2C_WSE_FLOW, "meshgemm", Ps[i], 14, Ps[i] <= 8, &g) == GPT2C_OK, "meshgemm: %s", gpt2c_errmsg());
        CHECK(gpt2c_wse_gemm(&p, GPT2C_WSE_WAVELET, "summa", Ps[i], 14, 0, &sw) == GPT2C_OK, "summa: %s", gpt2c_errmsg());
        CHECK(gpt2c_wse_gemm(&p, GPT2C_WSE_WAVELET, "meshgemm", Ps[i], 14, 0, &gw) == GPT2C_OK, "meshgemm: %s", gpt2c_errmsg());
        if (Ps[i] <= 8) { /* run.py's tolerance: rtol 1e-5 */
            CHECK(s.max_rel_err >= 0 && s.max_rel_err < 1e-5, "summa P=%d error %g", Ps[i], s.max_rel_err);
            CHECK(g.max_rel_err >= 0 && g.max_rel_err < 1e-5, "meshgemm P=%d error %g", Ps[i], g.max_rel_err);
        }
        CHECK(g.max_hops_per_step <= 2, "meshgemm P=%d moves a tile %d hops", Ps[i], g.max_hops_per_step);
        CHECK(s.max_hops_per_step == Ps[i] - 1, "summa P=%d: %d hops", Ps[i], s.max_hops_per_step);
        CHECK(within((double)s.cycles, (double)sw.cycles, 0.05) && within((double)g.cycles, (double)gw.cycles, 0.05),
              "GEMM P=%d: flow and wavelet differ", Ps[i]);
        summa_comm[i] = s.comm;
        mesh_comm[i] = g.comm;
    }
    CHECK(summa_comm[0] < summa_comm[1] && summa_comm[1] < summa_comm[2], "SUMMA's communication grows with P");
    /* per step, MeshGEMM's exposed communication does not grow with P */
    CHECK(mesh_comm[2] / 16 <= mesh_comm[0] / 4 + 1, "MeshGEMM's communication per step grows with P");
    /* acceptance 1: the residual example ported task by task (its colors, routes, queues, task IDs) */
    {
        gpt2c_wse_kernel_row r;
        CHECK(gpt2c_wse_example_residual(&p, 6, 4, &r) == GPT2C_OK, "residual example: %s", gpt2c_errmsg());
        CHECK(r.max_rel_err >= 0 && r.max_rel_err < 1e-5, "residual example error %g", r.max_rel_err);
        CHECK(r.cycles > 0 && r.colors_max == 3, "residual example: %llu cycles, %d colors",
              (unsigned long long)r.cycles, r.colors_max);
    }
    {
        gpt2c_wse_kernel_row r;
        CHECK(gpt2c_wse_example_checkerboard(&p, 4, 4, 32, 16, &r) == GPT2C_OK, "checkerboard example: %s",
              gpt2c_errmsg());
        CHECK(r.max_rel_err >= 0 && r.max_rel_err < 1e-2, "checkerboard (fp16) error %g", r.max_rel_err);
    }
    /* acceptance 1 (collective level): gemv-collectives_2d within run.py's tolerance, both fidelities */
    for (int f = 0; f < 2; f++) {
        gpt2c_wse_kernel_row r;
        CHECK(gpt2c_wse_gemv_example(&p, f ? GPT2C_WSE_WAVELET : GPT2C_WSE_FLOW, 4, 8, 4, &r) == GPT2C_OK,
              "gemv example: %s", gpt2c_errmsg());
        CHECK(r.max_rel_err >= 0 && r.max_rel_err < 1e-5, "gemv example error %g", r.max_rel_err);
        CHECK(r.cycles > 0, "gemv example cycles");
    }
    uint64_t prev = 0;
    for (int P = 16; P <= 1024; P *= 4) {
        gpt2c_wse_kernel_row c, t, g;
        CHECK(gpt2c_wse_reduce_study(&p, GPT2C_WSE_FLOW, GPT2C_WSE_CHAIN, 1, P, 64, &c) == GPT2C_OK, "chain");
        CHECK(gpt2c_wse_reduce_study(&p, GPT2C_WSE_FLOW, GPT2C_WSE_TREE, 1, P, 64, &t) == GPT2C_OK, "tree");
        CHECK(gpt2c_wse_reduce_study(&p, GPT2C_WSE_FLOW, GPT2C_WSE_GROUPS, 16, P, 64, &g) == GPT2C_OK, "groups");
        /* a chain of P/2 hops costs at least (hop + reduce_lat) per hop */
        CHECK(c.cycles >= (uint64_t)(P / 2) * 3, "chain P=%d: %llu cycles", P, (unsigned long long)c.cycles);
        CHECK(c.cycles > prev, "chain latency grows with P");
        prev = c.cycles;
        CHECK(c.colors_max == 2 && g.colors_max <= 4, "colors per PE: chain %d, groups %d", c.colors_max, g.colors_max);
        if (P == 1024) CHECK(g.cycles < c.cycles, "groups beat the chain on 1024 PEs (%llu vs %llu)",
                             (unsigned long long)g.cycles, (unsigned long long)c.cycles);
    }
}

static gpt2c_model *small_model(void) {
    gpt2c_config c = {.max_seq_len = 64, .vocab_size = 500, .num_layers = 2, .num_heads = 4, .channels = 64};
    gpt2c_model *m;
    if (gpt2c_config_check(&c, "test") || gpt2c_model_create(&c, &m)) {
        fprintf(stderr, "model: %s\n", gpt2c_errmsg());
        exit(1);
    }
    gpt2c_model_init_random(m, 7);
    /* larger weights than GPT-2's init, so greedy tokens vary with the context */
    int big[5] = {GPT2C_P_WPE, GPT2C_P_QKVW, GPT2C_P_ATTPROJW, GPT2C_P_FCW, GPT2C_P_FCPROJW};
    for (int k = 0; k < 5; k++)
        for (size_t i = 0; i < m->info[big[k]].numel; i++) m->params.t[big[k]][i] *= 20.0f;
    return m;
}

static gpt2c_wse_result *run(gpt2c_model *model, int W, int H, char strategy, gpt2c_wse_values v,
                             gpt2c_wse_fidelity f, int chunk) {
    gpt2c_wse_params p;
    gpt2c_wse_params_preset("wse2", &p);
    p.v[GPT2C_WSE_P_WIDTH] = W;
    p.v[GPT2C_WSE_P_HEIGHT] = H;
    gpt2c_wse_run_cfg c = {.strategy = strategy, .layers_per_region = 1, .seq = 12, .chunk = chunk, .decode = 16,
                           .values = v, .fidelity = f, .reduce = GPT2C_WSE_CHAIN, .group_num = 4, .place = 's'};
    gpt2c_wse_result *r = NULL;
    if (gpt2c_wse_run(model, &p, &c, &r) != GPT2C_OK) {
        CHECK(0, "run %c %dx%d: %s", strategy, W, H, gpt2c_errmsg());
        return NULL;
    }
    return r;
}

static void test_gpt2(void) {
    gpt2c_model *model = small_model();
    struct { int W, H; char s; int chunk; } cases[] = {{16, 16, 'a', 0}, {32, 8, 'b', 0}, {16, 16, 'b', 4}, {8, 8, 'a', 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gpt2c_wse_result *r = run(model, cases[i].W, cases[i].H, cases[i].s, GPT2C_WSE_VALUES_F32, GPT2C_WSE_FLOW,
                                  cases[i].chunk);
        if (!r) continue;
        double err;
        int match;
        CHECK(gpt2c_wse_check_ref(r, model, &err, &match) == GPT2C_OK, "check: %s", gpt2c_errmsg());
        CHECK(err >= 0 && err < 1e-4, "strategy %c %dx%d: logits rel err %g", cases[i].s, cases[i].W, cases[i].H, err);
        CHECK(match == 1, "strategy %c %dx%d: decode tokens differ from ref", cases[i].s, cases[i].W, cases[i].H);
        const int32_t *tok = gpt2c_wse_result_tokens(r);
        int distinct = 0;
        for (int k = 1; k < 16; k++) distinct += tok[k] != tok[0];
        CHECK(distinct > 0, "the test model's greedy tokens should vary");
        /* deterministic: same cycles twice; none mode costs the same program */
        gpt2c_wse_result *r2 = run(model, cases[i].W, cases[i].H, cases[i].s, GPT2C_WSE_VALUES_F32, GPT2C_WSE_FLOW,
                                   cases[i].chunk);
        CHECK(r2 && gpt2c_wse_result_cycles(r2) == gpt2c_wse_result_cycles(r), "not deterministic");
        gpt2c_wse_result *rw = run(model, cases[i].W, cases[i].H, cases[i].s, GPT2C_WSE_VALUES_F32, GPT2C_WSE_WAVELET,
                                   cases[i].chunk);
        CHECK(rw && within((double)gpt2c_wse_result_cycles(rw), (double)gpt2c_wse_result_cycles(r), 0.05),
              "GPT-2 flow %llu vs wavelet %llu cycles", (unsigned long long)gpt2c_wse_result_cycles(r),
              rw ? (unsigned long long)gpt2c_wse_result_cycles(rw) : 0ULL);
        gpt2c_wse_result_free(r);
        gpt2c_wse_result_free(r2);
        gpt2c_wse_result_free(rw);
    }
    /* the WSE-3 preset (SIMD table, queues) runs the same program */
    {
        gpt2c_wse_params p3;
        gpt2c_wse_params_preset("wse3", &p3);
        p3.v[GPT2C_WSE_P_WIDTH] = 16;
        p3.v[GPT2C_WSE_P_HEIGHT] = 16;
        gpt2c_wse_run_cfg c3 = {.strategy = 'a', .seq = 12, .decode = 4, .values = GPT2C_WSE_VALUES_F32,
                                .fidelity = GPT2C_WSE_FLOW, .place = 's'};
        gpt2c_wse_result *r3 = NULL;
        CHECK(gpt2c_wse_run(model, &p3, &c3, &r3) == GPT2C_OK, "wse3: %s", gpt2c_errmsg());
        double err;
        int match;
        if (r3) {
            CHECK(gpt2c_wse_check_ref(r3, model, &err, &match) == GPT2C_OK && err < 1e-4 && match == 1, "wse3 values");
            gpt2c_wse_result_free(r3);
        }
    }
    /* f16: a looser, documented bound */
    gpt2c_wse_result *r = run(model, 16, 16, 'a', GPT2C_WSE_VALUES_F16, GPT2C_WSE_FLOW, 0);
    if (r) {
        double err;
        int match;
        CHECK(gpt2c_wse_check_ref(r, model, &err, &match) == GPT2C_OK, "check f16: %s", gpt2c_errmsg());
        CHECK(err < 1e-2, "f16 logits rel err %g", err);
        gpt2c_wse_result_free(r);
    }
    /* an impossible layout fails with a PE-naming message, no crash */
    gpt2c_wse_params p;
    gpt2c_wse_params_preset("wse2", &p);
    p.v[GPT2C_WSE_P_WIDTH] = 2;
    p.v[GPT2C_WSE_P_HEIGHT] = 2;
    p.v[GPT2C_WSE_P_RESERVE] = 45000;
    gpt2c_wse_run_cfg c = {.strategy = 'a', .seq = 12, .decode = 0, .values = GPT2C_WSE_VALUES_NONE};
    gpt2c_wse_result *bad = NULL;
    expect_err(gpt2c_wse_run(model, &p, &c, &bad), "a model that does not fit", "SRAM over budget");
    gpt2c_model_free(model);
}

int main(void) {
    test_limits();
    test_tasks();
    test_op_costs();
    test_fabric();
    test_bcast_cost();
    test_fidelity_agreement();
    test_gemm_and_reductions();
    test_gpt2();
    if (fails) {
        fprintf(stderr, "%d failure(s)\n", fails);
        return 1;
    }
    printf("test_wse: all passed\n");
    return 0;
}
