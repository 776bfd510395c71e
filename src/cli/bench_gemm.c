/* `gpt2c bench gemm`: the cpu backend's GEMM on the GPT-2 shapes, each of the
 * three GEMMs of a linear layer (forward, dinp, dweight), against the blas
 * backend's cblas_sgemm when built; GFLOP/s and % of the measured FMA peak:
 * of the cached peak (`bench peak`), and of a "local" peak measured by short
 * bursts around each GEMM's timed runs, which follows a shared VM's speed (it
 * moved 2x within seconds).  The bursts are kept away from the timed runs
 * (a burst right before them cost the GEMM a few per cent): per GEMM, a burst
 * phase, then the untimed warm-up runs (>= 100 ms), then the timed runs, then
 * the next burst phase; the local peak is the median of the bursts on either
 * side. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/run_arg.h"
#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "gpt2c/peak.h"
#include "gpt2c/precision.h"
#include "kernels/bf16.h"
#include "kernels/cpu/bf16_engine.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_bf16.h"
#include "kernels/cpu/gemm_tune.h"
#include "kernels/kernels.h"
#ifdef GPT2C_HAVE_BLAS
#include "kernels/blas/blas.h"
#endif


static int g_cpu_clock; /* --cpu-time: process CPU time instead of wall time */
static double now_ms(void) {
    if (!g_cpu_clock) return gpt2c_now_ns() * 1e-6;
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int g_bf16; /* --precision bf16: the weight in bf16, activations fp32 (rounded as packed) */
static const uint16_t *g_wb;
/* bf16 dinp: W's data-gradient panels, as bf16 training keeps them (ops.h's
 * bf16_panels, written by its AdamW), where this CPU's GEMM reads them; NULL:
 * W packed from its rows (GPT2C_BF16_PANELS=0 too, as in training) */
static const uint32_t *g_wpanels;
static int g_panel_width;
/* the weight gradient as training writes it: over the stale one (GEMM_DW),
 * or added to it (--dw-accumulate: gradient accumulation's later micro-steps) */
static int g_dw_acc;
/* bf16, the LM head: dout as bf16 training keeps the loss gradient, bf16
 * words in place of the fp32 logits (ops.h's softmax_xent_backward_bf16:
 * leading dimension 2*OC words), read by its dinp and dweight; NULL: fp32 */
static const uint16_t *g_dout_bf16;

static void run_gemm(int blas, gemm_linear_op op, float *C, const float *A, const float *B, int N, int IC, int OC) {
    if (op == GEMM_DW && g_dw_acc) op = GEMM_DW_ACC;
    if (g_bf16) {
        const gpt2c_isa isa = gpt2c_cpu_isa();
        /* dout: fp32 rows, or (the LM head) the bf16 words training stores in place of the logits */
        const void *dp = g_dout_bf16 ? (const void *)g_dout_bf16 : (const void *)A;
        const gpt2c_format df = g_dout_bf16 ? GPT2C_FMT_BF16 : GPT2C_FMT_F32;
        const long ld = g_dout_bf16 ? 2L * OC : OC;
        if (op == GEMM_FWD) {
            gpt2c_cpu_linear_gemm_bf16(isa, GEMM_FWD, C, A, GPT2C_FMT_F32, g_wb, GPT2C_FMT_BF16, N, IC, OC);
        } else if (op == GEMM_DINP) { /* W from its panels where kept, as bf16 training reads it */
            const gemm_operand d = {dp, df, ld, 1}, w = {g_wb, GPT2C_FMT_BF16, IC, 1};
            if (!g_wpanels || !gpt2c_cpu_gemm_bf16_paneled_b(isa, N, IC, OC, d, g_wpanels, g_panel_width, C, IC, NULL, 0))
                gpt2c_cpu_gemm_bf16(isa, N, IC, OC, d, w, C, IC, NULL, 0);
        } else {
            const gemm_operand dt = {dp, df, 1, ld}, x = {B, GPT2C_FMT_F32, IC, 1};
            gpt2c_cpu_gemm_bf16(isa, OC, IC, N, dt, x, C, IC, NULL, op == GEMM_DW_ACC);
        }
        return;
    }
#ifdef GPT2C_HAVE_BLAS
    if (blas) {
        gpt2c_blas_linear_gemm(op, C, A, B, N, IC, OC);
        return;
    }
#endif
    (void)blas;
    gpt2c_cpu_linear_gemm(gpt2c_cpu_isa(), op, C, A, B, N, IC, OC);
}

/* Local peak bursts: a phase of LP_BURSTS short bursts (each the fastest of
 * three ~5 ms runs), GFLOP/s; the phase after one GEMM's timed runs is also
 * the phase before the next GEMM's warm-up. */
enum { LP_BURSTS = 2 };
static int g_local_nt; /* threads of the local peak bursts; 0: none */
static double g_lp_prev[LP_BURSTS], g_pr_prev[LP_BURSTS];
static int g_lp_have_prev;
/* With `probe` (the cpu pass), each burst is followed by the in-L2 GEMM
 * probe (gemm_tune.h: the micro-kernel with nothing to miss; bf16: the pair
 * engine's, none where the GEMM runs on AMX tiles), so a
 * GEMM's rate over the probe's is what the memory hierarchy leaves of the
 * kernel (bench/gemm_hierarchy.sh splits it per shape); else pr[i] = 0 */
static void local_peak_phase(double *v, double *pr, int probe) {
    /* bf16: the loop of the engine its GEMM runs on (AMX tiles, vdpbf16ps or FMAs, bf16_engine.h) */
    const int dp = !g_bf16 ? 0 : gpt2c_cpu_bf16_amx_hw() ? GPT2C_PEAK_BURST_AMX : gpt2c_cpu_bf16_use_dp();
    for (int i = 0; i < LP_BURSTS; i++) {
        v[i] = gpt2c_peak_burst_gflops(gpt2c_cpu_isa(), dp, g_local_nt, 0.015);
        pr[i] = !probe  ? 0
                : g_bf16 ? gpt2c_cpu_gemm_bf16_probe_gflops(gpt2c_cpu_isa(), g_local_nt, 0.015)
                         : gpt2c_cpu_gemm_probe_gflops(gpt2c_cpu_isa(), g_local_nt, 0.015);
    }
}
static double median4(double *v) {
    qsort(v, 2 * LP_BURSTS, sizeof(double), cmp_double);
    return 0.5 * (v[LP_BURSTS - 1] + v[LP_BURSTS]);
}

/* median and best ms of `reps` runs, after warming up (caches, page faults,
 * thread wake-up, and distance from the last burst) for at least 3 runs and
 * 100 ms; and the local peak and probe (medians of the burst phases before
 * the warm-up and after the timed runs; 0 without bursts) */
static void time_gemm(int blas, gemm_linear_op op, float *C, const float *A, const float *B, int N, int IC, int OC,
                      int reps, double *med, double *best, double *lpk, double *lpr) {
    double t[64], lp[2 * LP_BURSTS], pr[2 * LP_BURSTS];
    const int probe = !blas; /* only the cpu rows report it (bf16 on AMX tiles: none, the probe returns 0) */
    if (g_local_nt && !g_lp_have_prev) local_peak_phase(g_lp_prev, g_pr_prev, probe), g_lp_have_prev = 1;
    int warm = 0;
    for (double w0 = now_ms(); warm < 3 || now_ms() - w0 < 100; warm++) run_gemm(blas, op, C, A, B, N, IC, OC);
    for (int r = 0; r < reps; r++) {
        const double t0 = now_ms();
        run_gemm(blas, op, C, A, B, N, IC, OC);
        t[r] = now_ms() - t0;
    }
    *lpk = *lpr = 0;
    if (g_local_nt) {
        memcpy(lp, g_lp_prev, sizeof g_lp_prev);
        memcpy(pr, g_pr_prev, sizeof g_pr_prev);
        local_peak_phase(g_lp_prev, g_pr_prev, probe);
        memcpy(lp + LP_BURSTS, g_lp_prev, sizeof g_lp_prev);
        memcpy(pr + LP_BURSTS, g_pr_prev, sizeof g_pr_prev);
        *lpk = median4(lp);
        *lpr = median4(pr);
    }
    qsort(t, reps, sizeof(double), cmp_double);
    *med = t[reps / 2];
    *best = t[0];
}

int bench_gemm(int argc, char **argv) {
    const char *isa = "auto", *precision = "fp32";
    int threads = 0, reps = 5, json = 0, no_blas = 0, autotune = 0, no_local = 0;
    cli_intlist ns = {{256, 1024}, 2};
    cli_opt opts[] = {
        {"--n", CLI_INTLIST, &ns, "rows N = B*T (default 256,1024)", 1, 1 << 20},
        THREADS_ARG_OPT(threads, "threads (default: all cores)"),
        {"--reps", CLI_INT, &reps, "timed runs per GEMM (median and best reported)", 1, 64},
        {"--isa", CLI_STR, &isa, "cpu GEMM path: auto, avx512, avx2, scalar", 0, 0},
        {"--precision", CLI_STR, &precision, "fp32 or bf16 (bf16 operands, fp32 accumulation; the weight stored bf16)", 0, 0},
        {"--autotune", CLI_FLAG, &autotune, "redo the GEMM's blocking autotune (of --precision) for this CPU (cached per CPU signature)", 0, 0},
        {"--dw-accumulate", CLI_FLAG, &g_dw_acc,
         "dweight adds to dW (as gradient accumulation's later micro-steps) instead of overwriting it (as training's first)", 0, 0},
        {"--no-blas", CLI_FLAG, &no_blas, "skip the cblas comparison", 0, 0},
        {"--no-local-peak", CLI_FLAG, &no_local, "skip the peak bursts next to each GEMM (only the cached peak's %)", 0, 0},
        {"--cpu-time", CLI_FLAG, &g_cpu_clock, "time by process CPU time (with --threads 1: immune to preemption)", 0, 0},
        {"--json", CLI_FLAG, &json, "print one JSON object", 0, 0},
    };
    int rc = cli_parse("bench gemm", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if (gpt2c_cpu_force_isa(isa) != GPT2C_OK) return cli_fail_option("bench gemm", "--isa");
    gpt2c_format prec;
    if (gpt2c_format_parse(precision, &prec) != 0 || (prec != GPT2C_FMT_F32 && prec != GPT2C_FMT_BF16))
        return cli_error("bench gemm", "--precision: unknown value '%s' (fp32 or bf16)", precision);
    g_bf16 = prec == GPT2C_FMT_BF16;
    const gpt2c_kernels *kernels = NULL; /* the cpu table: bf16 dinp's weight panels */
    if (gpt2c_kernels_get("cpu", &kernels) != GPT2C_OK) return cli_fail_status("bench gemm");
    int have_blas = 0;
#ifdef GPT2C_HAVE_BLAS
    have_blas = !no_blas && !g_bf16; /* no cblas_sbgemm is used (none in Debian's OpenBLAS) */
    /* loads the library (json or not) and names its core; a missing one drops the column */
    const char *blas_desc = have_blas ? gpt2c_blas_describe() : "";
    if (have_blas && strncmp(blas_desc, "unavailable", 11) == 0) {
        if (!json) printf("  blas: %s\n", blas_desc);
        have_blas = 0;
    }
#endif
    const int nt = gpt2c_set_threads(threads);
    const double peak = g_bf16 ? bench_peak_bf16_gflops(nt) : bench_peak_gflops(nt);
    g_local_nt = no_local ? 0 : nt;
    static const int shapes[5][2] = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}, {768, 50304}};
    static const char *opname[3] = {"fwd", "dinp", "dweight"};
    /* the blocking: cached autotune for this CPU, or tuned now (--autotune: always) */
    int from_cache = 0, fmc = 0, fnc = 0;
    double tuned = 0;
    gemm_bf16_blocking bl = {0, 0, 0};
    /* GPT2C_GEMM_AUTOTUNE=0 (and no --autotune): the cache-size blocking, as everywhere else */
    const char *tune_env = getenv("GPT2C_GEMM_AUTOTUNE");
    const int no_tune = !autotune && tune_env && strcmp(tune_env, "0") == 0;
    if (g_bf16 && no_tune) {
        gpt2c_cpu_gemm_bf16_first_use(gpt2c_cpu_isa());
        bl = gpt2c_cpu_gemm_bf16_get_blocking();
    } else if (g_bf16) {
        bl = gpt2c_cpu_gemm_bf16_autotune(gpt2c_cpu_isa(), autotune, &from_cache, &tuned);
        gpt2c_cpu_gemm_bf16_first_use(gpt2c_cpu_isa()); /* done: keeps what was just chosen */
    }
    if (!g_bf16 && no_tune) {
        gpt2c_cpu_gemm_fp32_first_use(gpt2c_cpu_isa());
    } else if (!g_bf16 && gpt2c_cpu_isa() != GPT2C_ISA_SCALAR) {
        gpt2c_cpu_gemm_fp32_autotune(gpt2c_cpu_isa(), autotune, &fmc, &fnc, &from_cache, &tuned);
        gpt2c_cpu_gemm_fp32_first_use(gpt2c_cpu_isa()); /* done: keeps what was just chosen */
    }
    gpt2c_cpu_gemm_fp32_blocking(&fmc, &fnc);
    if (!json) {
        printf("bench gemm: %s, isa %s, %d threads, measured %s peak %.1f GFLOP/s; %s [%s]; %s time\n",
               g_bf16 ? "bf16" : "fp32", gpt2c_isa_name(gpt2c_cpu_isa()), nt,
               g_bf16 ? (gpt2c_cpu_bf16_amx_hw() ? "AMX TDPBF16PS"
                         : strcmp(gpt2c_cpu_gemm_bf16_kernel(gpt2c_cpu_isa())->name, "avx512bf16") == 0 ? "vdpbf16ps" : "FMA (bf16 emulated)") : "FMA",
               peak, gpt2c_cpu_brand(), gpt2c_cpu_signature(), g_cpu_clock ? "CPU" : "wall");
        if (g_bf16) {
            printf("  bf16 kernel %s (%s), blocking kc %d mc %d nc %d (%s)\n", gpt2c_cpu_gemm_bf16_kernel(gpt2c_cpu_isa())->name,
                   gpt2c_cpu_isa() == GPT2C_ISA_AVX512 ? gpt2c_cpu_bf16_engine_note() : "fp32 FMAs on this ISA path", bl.kc,
                   bl.mc, bl.nc, gpt2c_cpu_gemm_tune_note(1));
            printf("  bf16 GEMM (M >= %d): %s\n", GPT2C_AMX_MIN_ROWS, gpt2c_cpu_bf16_amx_note());
            const int pw = kernels->bf16_panel_width(768, 768);
            printf("  bf16 dinp: %s\n", !gpt2c_bf16_panels_wanted() ? "W packed from its rows (GPT2C_BF16_PANELS=0)"
                                     : pw ? "W read from its data-gradient panels, as bf16 training keeps them (GPT2C_BF16_PANELS=0: packed from its rows)"
                                          : "W packed from its rows (no panels on this GEMM path)");
            printf("  bf16 LM head: dinp and dweight read dout as bf16, as bf16 training stores the loss gradient\n");
        } else
            printf("  fp32 blocking kc %d mc %d nc %d (%s)\n", gpt2c_cpu_gemm_fp32_kc(), fmc, fnc,
                   gpt2c_cpu_isa() == GPT2C_ISA_SCALAR ? "from this core's L2" : gpt2c_cpu_gemm_tune_note(0));
        printf("  dweight: %s\n", g_dw_acc ? "dW += dout^T X (--dw-accumulate: gradient accumulation's later micro-steps)"
                                            : "dW = dout^T X, over the old gradient, as training writes it (--dw-accumulate: +=)");
#ifdef GPT2C_HAVE_BLAS
        if (have_blas) printf("  blas: %s\n", blas_desc);
        else if (g_bf16 && !no_blas) printf("  blas: %s\n", gpt2c_blas_sbgemm_status());
#endif
        printf("  %5s %5s %6s %-8s | %9s %8s %8s %6s %6s %6s | %9s %8s %6s %6s | %7s\n", "N", "IC", "OC", "op", "cpu_ms",
               "GFLOP/s", "best", "%peak", "%local", "%probe", "blas_ms", "GFLOP/s", "%peak", "%local", "cpu/blas");
    } else {
        printf("{\"bench\":\"gemm\",\"precision\":\"%s\",\"isa\":\"%s\",\"threads\":%d,\"peak_gflops\":%.1f,\"blocking\":{\"kc\":%d,\"mc\":%d,\"nc\":%d},",
               g_bf16 ? "bf16" : "fp32", gpt2c_isa_name(gpt2c_cpu_isa()), nt, peak, g_bf16 ? bl.kc : gpt2c_cpu_gemm_fp32_kc(), g_bf16 ? bl.mc : fmc,
               g_bf16 ? bl.nc : fnc);
        printf("\"dweight_accumulates\":%s,\"lmhead_dout_bf16\":%s,", g_dw_acc ? "true" : "false", g_bf16 ? "true" : "false");
        printf("\"tune\":\"");
        for (const char *c = gpt2c_cpu_gemm_tune_note(g_bf16); *c; c++) printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
        printf("\",");
#ifdef GPT2C_HAVE_BLAS
        if (have_blas || (g_bf16 && !no_blas)) {
            const char *d = have_blas ? blas_desc : gpt2c_blas_sbgemm_status();
            printf("\"%s\":\"", have_blas ? "blas" : "blas_bf16");
            for (const char *c = d; *c; c++) printf(*c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
            printf("\",");
        }
#endif
        printf("\"results\":[");
    }
    /* every cpu timing first, then every blas timing: OpenBLAS's threads spin
     * for a while after each call and would steal a core from the next cpu run */
    static double med[2][64][5][3], bestv[2][64][5][3], lpk[2][64][5][3], lpr[2][64][5][3];
    for (int pass = 0; pass < 1 + have_blas; pass++)
        for (int ni = 0; ni < ns.n && ni < 64; ni++)
            for (int s = 0; s < 5; s++) {
                const int N = ns.items[ni], IC = shapes[s][0], OC = shapes[s][1];
                /* the weight, its gradient and bf16 forms in 2 MiB pages, as training's slabs (params.c,
                 * precision.c); activations and their gradients on ordinary pages, as training's */
                float *X = gpt2c_alloc(sizeof(float) * N * IC, "X"), *W = gpt2c_alloc_huge(sizeof(float) * (size_t)OC * IC, "W");
                float *D = gpt2c_alloc(sizeof(float) * (size_t)N * OC, "dout");
                float *out = gpt2c_alloc(sizeof(float) * (size_t)N * OC, "out");
                float *dX = gpt2c_alloc(sizeof(float) * N * IC, "dX"), *dW = gpt2c_alloc_huge(sizeof(float) * (size_t)OC * IC, "dW");
                if (!X || !W || !D || !out || !dX || !dW) return cli_fail_status("bench gemm");
                gpt2c_rng r;
                gpt2c_rng_seed(&r, 7, 0);
                for (size_t i = 0; i < (size_t)N * IC; i++) X[i] = gpt2c_rng_uniform(&r) - 0.5f;
                for (size_t i = 0; i < (size_t)OC * IC; i++) W[i] = gpt2c_rng_uniform(&r) - 0.5f;
                for (size_t i = 0; i < (size_t)N * OC; i++) D[i] = gpt2c_rng_uniform(&r) - 0.5f;
                uint16_t *Wb = NULL;
                if (g_bf16) {
                    Wb = gpt2c_alloc_huge(sizeof(uint16_t) * (size_t)OC * IC, "W bf16");
                    if (!Wb) return cli_fail_status("bench gemm");
                    for (size_t i = 0; i < (size_t)OC * IC; i++) Wb[i] = gpt2c_bf16_from_f32(W[i]);
                }
                g_wb = Wb;
                uint32_t *Wp = NULL; /* W's panels (bf16 training's dinp operand) */
                g_panel_width = g_bf16 && gpt2c_bf16_panels_wanted() ? kernels->bf16_panel_width(OC, IC) : 0;
                if (g_panel_width) {
                    Wp = gpt2c_alloc_huge(sizeof(uint16_t) * (size_t)OC * IC, "W panels");
                    if (!Wp) return cli_fail_status("bench gemm");
                    kernels->bf16_panels(Wp, Wb, OC, IC, g_panel_width);
                }
                g_wpanels = Wp;
                uint16_t *Db = NULL; /* the LM head's bf16 dout (bf16: g_dout_bf16) */
                if (g_bf16 && s == 4) {
                    Db = gpt2c_alloc(sizeof(uint16_t) * 2 * (size_t)N * OC, "dout bf16");
                    if (!Db) return cli_fail_status("bench gemm");
                    for (size_t n = 0; n < (size_t)N; n++)
                        for (size_t i = 0; i < (size_t)OC; i++) Db[n * 2 * OC + i] = gpt2c_bf16_from_f32(D[n * OC + i]);
                }
                g_dout_bf16 = Db;
                for (int op = 0; op < 3; op++) {
                    float *C = op == GEMM_FWD ? out : op == GEMM_DINP ? dX : dW;
                    const float *A = op == GEMM_FWD ? X : D, *Bm = op == GEMM_DW ? X : W;
                    time_gemm(pass, (gemm_linear_op)op, C, A, Bm, N, IC, OC, reps, &med[pass][ni][s][op],
                              &bestv[pass][ni][s][op], &lpk[pass][ni][s][op], &lpr[pass][ni][s][op]);
                }
                g_dout_bf16 = NULL;
                gpt2c_free(Db), gpt2c_free(Wp), gpt2c_free(Wb), gpt2c_free(X), gpt2c_free(W), gpt2c_free(D), gpt2c_free(out), gpt2c_free(dX), gpt2c_free(dW);
            }
    int first = 1, voided = 0;
    for (int ni = 0; ni < ns.n && ni < 64; ni++)
        for (int s = 0; s < 5; s++) {
            const int N = ns.items[ni], IC = shapes[s][0], OC = shapes[s][1];
            const double gflop = 2.0 * N * IC * OC * 1e-9;
            for (int op = 0; op < 3; op++) {
                const double cm = med[0][ni][s][op], cb = bestv[0][ni][s][op], bm = have_blas ? med[1][ni][s][op] : 0;
                const double cg = gflop / (cm * 1e-3), bg = have_blas ? gflop / (bm * 1e-3) : 0;
                /* a local peak below the GEMM's own rate was taken in a slow
                 * moment (a VM neighbour): void, not a % above 100 */
                double cl = lpk[0][ni][s][op], bl_ = have_blas ? lpk[1][ni][s][op] : 0, cp = lpr[0][ni][s][op];
                if (cl > 0 && cg > cl) cl = 0, voided++;
                if (cp > 0 && cg > cp) cp = 0, voided++; /* the probe caught a slow moment */
                if (bl_ > 0 && bg > bl_) bl_ = 0, voided++;
                if (!json) {
                    char b1[16] = "-", b2[16] = "-", b3[16] = "-", b4[16] = "-", b5[16] = "-", c5[16] = "-", c6[16] = "-";
                    if (cl > 0) snprintf(c5, sizeof c5, "%.1f", 100 * cg / cl);
                    if (cp > 0) snprintf(c6, sizeof c6, "%.1f", 100 * cg / cp);
                    if (bl_ > 0) snprintf(b5, sizeof b5, "%.1f", 100 * bg / bl_);
                    if (have_blas) {
                        snprintf(b1, sizeof b1, "%.2f", bm);
                        snprintf(b2, sizeof b2, "%.1f", bg);
                        snprintf(b3, sizeof b3, "%.1f", 100 * bg / peak);
                        snprintf(b4, sizeof b4, "%.2f", cg / bg);
                    }
                    printf("  %5d %5d %6d %-8s | %9.2f %8.1f %8.1f %6.1f %6s %6s | %9s %8s %6s %6s | %7s\n", N, IC, OC,
                           opname[op], cm, cg, gflop / (cb * 1e-3), 100 * cg / peak, c5, c6, b1, b2, b3, b5, b4);
                } else {
                    printf("%s{\"N\":%d,\"IC\":%d,\"OC\":%d,\"op\":\"%s\",\"cpu_median_ms\":%.4f,\"cpu_gflops\":%.2f,"
                           "\"cpu_best_gflops\":%.2f,\"cpu_pct_peak\":%.1f",
                           first ? "" : ",", N, IC, OC, opname[op], cm, cg, gflop / (cb * 1e-3), 100 * cg / peak);
                    if (cl > 0) printf(",\"local_peak_gflops\":%.1f,\"cpu_pct_local_peak\":%.1f", cl, 100 * cg / cl);
                    if (cp > 0) printf(",\"probe_gflops\":%.1f,\"cpu_pct_probe\":%.1f", cp, 100 * cg / cp);
                    if (have_blas) printf(",\"blas_median_ms\":%.4f,\"blas_gflops\":%.2f", bm, bg);
                    if (have_blas && bl_ > 0)
                        printf(",\"blas_local_peak_gflops\":%.1f,\"blas_pct_local_peak\":%.1f", bl_, 100 * bg / bl_);
                    printf("}");
                    first = 0;
                }
                fflush(stdout);
            }
        }
    if (json) {
        printf("]}\n");
    } else {
        printf("  (GFLOP/s from the median; 'best' from the fastest run; %%peak: of the cached peak, same isa and threads;\n"
               "   %%local: of the median of the peak bursts taken before that GEMM's warm-up and after its timed runs;\n"
               "   %%probe: of the in-L2 GEMM probe taken after each burst, the same micro-kernel (bf16: the pair engine's)\n"
               "   with nothing to miss: what the memory hierarchy leaves of the kernel; bench/gemm_hierarchy.sh splits\n"
               "   fp32's per shape)\n");
        if (voided)
            printf("  (%d local figure%s void (\"-\"): below the GEMM's own rate, so the bursts or probes ran in a slow "
                   "moment)\n",
                   voided, voided > 1 ? "s" : "");
    }
    return 0;
}
