/* `gpt2c wse run|sweep`: GPT-2 on a simulated wafer-scale mesh (src/wse). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_arg.h"
#include "cli/run_arg.h"
#include "gpt2c/wse.h"

#define CMD "wse"

typedef struct {
    model_arg ma;
    const char *machine, *mesh, *strategy, *values, *fidelity, *reduce, *place, *out;
    int lpr, grid, seq, chunk, decode, groups, trace_pes, quiet;
    long long seed;
    cli_strlist set;
} wse_opts;

static int parse_common(const char *cmd, wse_opts *o, gpt2c_wse_params *p, gpt2c_wse_run_cfg *c) {
    if (gpt2c_wse_params_preset(o->machine, p) != GPT2C_OK) return cli_fail_status(cmd);
    if (o->mesh) {
        int w, h;
        char tail;
        if (sscanf(o->mesh, "%dx%d%c", &w, &h, &tail) != 2 || w < 1 || h < 1)
            return cli_error(cmd, "--mesh %s: expected WxH, e.g. 750x994", o->mesh);
        if (gpt2c_wse_param_set(p, "width", w) || gpt2c_wse_param_set(p, "height", h)) return cli_fail_status(cmd);
    }
    for (int i = 0; i < o->set.n; i++) {
        char name[64];
        double v;
        const char *eq = strchr(o->set.items[i], '=');
        if (!eq || eq == o->set.items[i] || (size_t)(eq - o->set.items[i]) >= sizeof name || sscanf(eq + 1, "%lf", &v) != 1)
            return cli_error(cmd, "--set %s: expected name=value", o->set.items[i]);
        memcpy(name, o->set.items[i], (size_t)(eq - o->set.items[i]));
        name[eq - o->set.items[i]] = 0;
        if (gpt2c_wse_param_set(p, name, v)) return cli_fail_status(cmd);
    }
    memset(c, 0, sizeof *c);
    if (strlen(o->strategy) != 1 || !strchr("abc", o->strategy[0]))
        return cli_error(cmd, "--strategy %s: expected a, b or c", o->strategy);
    c->strategy = o->strategy[0];
    c->layers_per_region = o->lpr;
    c->grid = o->grid;
    c->seq = o->seq;
    c->chunk = o->chunk;
    c->decode = o->decode;
    c->group_num = o->groups;
    c->trace_pes = o->trace_pes;
    if (!strcmp(o->values, "f32")) c->values = GPT2C_WSE_VALUES_F32;
    else if (!strcmp(o->values, "f16")) c->values = GPT2C_WSE_VALUES_F16;
    else if (!strcmp(o->values, "none")) c->values = GPT2C_WSE_VALUES_NONE;
    else return cli_error(cmd, "--values %s: expected f32, f16 or none", o->values);
    if (!strcmp(o->fidelity, "flow")) c->fidelity = GPT2C_WSE_FLOW;
    else if (!strcmp(o->fidelity, "wavelet")) c->fidelity = GPT2C_WSE_WAVELET;
    else return cli_error(cmd, "--fidelity %s: expected wavelet or flow", o->fidelity);
    if (!strcmp(o->reduce, "chain")) c->reduce = GPT2C_WSE_CHAIN;
    else if (!strcmp(o->reduce, "tree")) c->reduce = GPT2C_WSE_TREE;
    else if (!strcmp(o->reduce, "groups")) c->reduce = GPT2C_WSE_GROUPS;
    else return cli_error(cmd, "--reduce %s: expected chain, tree or groups", o->reduce);
    if (strlen(o->place) != 1 || !strchr("rcs", o->place[0]))
        return cli_error(cmd, "--place %s: expected r (row-major), c (column-major) or s (snake)", o->place);
    c->place = o->place[0];
    if (c->fidelity == GPT2C_WSE_WAVELET && p->v[GPT2C_WSE_P_WIDTH] * p->v[GPT2C_WSE_P_HEIGHT] > 128 * 128)
        return cli_error(cmd, "--fidelity wavelet simulates every wavelet: meshes up to 128x128 (use flow)");
    return 0;
}

#define COMMON_OPTS(o)                                                                                          \
    MODEL_ARG_OPTS((o).ma), {"--machine", CLI_STR, &(o).machine, "wse2 | wse3 parameter preset", 0, 0},        \
        {"--mesh", CLI_STR, &(o).mesh, "WxH PEs (default: the preset's 750x994 / 755x1170)", 0, 0},            \
        {"--strategy", CLI_STR, &(o).strategy, "a: whole mesh per op, b: one layer per region, c: k per region", 0, 0}, \
        {"--layers-per-region", CLI_INT, &(o).lpr, "k for strategy c", 1, 4096},                               \
        {"--grid", CLI_INT, &(o).grid, "P of the P x P regions (default: largest that fits)", 1, 100000},      \
        SEQ_ARG_OPT((o).seq, "prompt tokens"),                                             \
        {"--chunk", CLI_INT, &(o).chunk, "prefill tokens per pipeline step (default: all)", 0, 1 << 20},       \
        {"--decode", CLI_INT, &(o).decode, "greedy tokens after the prompt", 0, 1 << 20},                     \
        {"--values", CLI_STR, &(o).values, "f32 | f16 | none (cost only)", 0, 0},                              \
        {"--fidelity", CLI_STR, &(o).fidelity, "flow | wavelet (every wavelet an event; small meshes)", 0, 0},  \
        {"--reduce", CLI_STR, &(o).reduce, "row reductions: chain | tree | groups", 0, 0},                     \
        {"--groups", CLI_INT, &(o).groups, "groups of --reduce groups", 1, 100000},                            \
        {"--place", CLI_STR, &(o).place, "region order: r | c | s (snake)", 0, 0},                              \
        {"--set", CLI_STRLIST, &(o).set, "name=value machine parameters (see --params)", 0, 0},                \
        SEED_ARG_OPT((o).seed, "init seed of a fresh model")

static void defaults(wse_opts *o) {
    memset(o, 0, sizeof *o);
    o->machine = "wse2";
    o->strategy = "a";
    o->values = "f32";
    o->fidelity = "flow";
    o->reduce = "chain";
    o->place = "s";
    o->seq = 64;
    o->groups = 4;
    o->lpr = 1;
    o->seed = 1337;
    o->trace_pes = 8;
}

static void print_params(const gpt2c_wse_params *p) {
    for (int i = 0; i < GPT2C_WSE_NPARAMS; i++)
        printf("  %-16s %-10g %s\n", gpt2c_wse_param_name(i), p->v[i], gpt2c_wse_param_source(i));
}

static int cmd_run(int argc, char **argv) {
    wse_opts o;
    defaults(&o);
    int show_params = 0;
    cli_opt opts[] = {COMMON_OPTS(o),
                      {"--out", CLI_STR, &o.out, "report directory (report.json, report.html, trace.json)", 0, 0},
                      {"--trace-pes", CLI_INT, &o.trace_pes, "PEs in the trace (diagonals of the first regions)", 0, 4096},
                      {"--params", CLI_FLAG, &show_params, "print the parameters with their sources", 0, 0},
                      {"--quiet", CLI_FLAG, &o.quiet, "only the summary line", 0, 0}};
    int rc = cli_parse(CMD " run", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    gpt2c_wse_params p;
    gpt2c_wse_run_cfg c;
    if ((rc = parse_common(CMD " run", &o, &p, &c))) return rc;
    gpt2c_model *model = NULL;
    int loaded;
    if (model_arg_make(CMD " run", &o.ma, (uint64_t)o.seed, &model, &loaded)) return 1;
    if (!o.quiet || show_params) {
        printf("machine parameters (value, source):\n");
        print_params(&p);
    }
    gpt2c_wse_result *r;
    if (gpt2c_wse_run(model, &p, &c, &r) != GPT2C_OK) {
        gpt2c_model_free(model);
        return cli_fail_status(CMD " run");
    }
    rc = 0;
    if (c.values != GPT2C_WSE_VALUES_NONE) {
        double err;
        int match;
        if (gpt2c_wse_check_ref(r, model, &err, &match) != GPT2C_OK) rc = cli_fail_status(CMD " run");
        else {
            printf("max_rel_err_vs_ref %.3g (max |wse - ref| / max |ref| over the prompt's logits)\n", err);
            if (match >= 0) printf("decode tokens %s ref's greedy tokens\n", match ? "match" : "DIFFER from");
        }
    }
    printf("%s\n", gpt2c_wse_result_summary(r));
    if (!rc && o.out && gpt2c_wse_write_report(r, o.out) != GPT2C_OK) rc = cli_fail_status(CMD " run");
    else if (!rc && o.out) printf("wrote %s/report.json, %s/report.html, %s/trace.json\n", o.out, o.out, o.out);
    gpt2c_wse_result_free(r);
    gpt2c_model_free(model);
    return rc;
}

/* the sensitivity study: both strategies under each parameter combination */
static int cmd_sweep(int argc, char **argv) {
    wse_opts o;
    defaults(&o);
    o.values = "none";
    o.trace_pes = 0;
    cli_opt opts[] = {COMMON_OPTS(o), {"--out", CLI_STR, &o.out, "directory for sweep.csv", 0, 0}};
    int rc = cli_parse(CMD " sweep", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    gpt2c_wse_params p0;
    gpt2c_wse_run_cfg c0;
    if ((rc = parse_common(CMD " sweep", &o, &p0, &c0))) return rc;
    gpt2c_model *model = NULL;
    int loaded;
    if (model_arg_make(CMD " sweep", &o.ma, (uint64_t)o.seed, &model, &loaded)) return 1;
    static const double HOP[2] = {1, 2}, FMA[2] = {0.5, 1}, SETUP[2] = {5, 16};
    static const char STRAT[2] = {'a', 'b'};
    FILE *csv = NULL;
    char path[4096];
    if (o.out) {
        snprintf(path, sizeof path, "%s/sweep.csv", o.out);
        csv = fopen(path, "w");
        if (!csv) {
            gpt2c_model_free(model);
            return cli_error(CMD " sweep", "%s: cannot write", path);
        }
        fprintf(csv, "hop,fma32_rate,setup,strategy,cycles,prefill_cycles,ms_at_%.2fGHz,ms_at_%.2fGHz\n",
                p0.v[GPT2C_WSE_P_CLOCK], p0.v[GPT2C_WSE_P_CLOCK_ALT]);
    }
    printf("%-4s %-10s %-6s %-14s %-14s %-8s\n", "hop", "fma32_rate", "setup", "cycles a", "cycles b", "faster");
    int wins[2] = {0, 0};
    for (int h = 0; h < 2 && !rc; h++)
        for (int f = 0; f < 2 && !rc; f++)
            for (int s = 0; s < 2 && !rc; s++) {
                gpt2c_wse_params p = p0;
                p.v[GPT2C_WSE_P_HOP] = HOP[h];
                p.v[GPT2C_WSE_P_FMA32] = FMA[f];
                p.v[GPT2C_WSE_P_SETUP] = SETUP[s];
                uint64_t cyc[2] = {0, 0};
                for (int k = 0; k < 2; k++) {
                    gpt2c_wse_run_cfg c = c0;
                    c.strategy = STRAT[k];
                    gpt2c_wse_result *r;
                    if (gpt2c_wse_run(model, &p, &c, &r) != GPT2C_OK) {
                        rc = cli_fail_status(CMD " sweep");
                        break;
                    }
                    cyc[k] = gpt2c_wse_result_cycles(r);
                    if (csv)
                        fprintf(csv, "%g,%g,%g,%c,%llu,%llu,%.6f,%.6f\n", HOP[h], FMA[f], SETUP[s], STRAT[k],
                                (unsigned long long)cyc[k], (unsigned long long)gpt2c_wse_result_prefill_cycles(r),
                                cyc[k] / (p.v[GPT2C_WSE_P_CLOCK] * 1e6), cyc[k] / (p.v[GPT2C_WSE_P_CLOCK_ALT] * 1e6));
                    gpt2c_wse_result_free(r);
                }
                if (rc) break;
                int w = cyc[1] < cyc[0];
                wins[w]++;
                printf("%-4g %-10g %-6g %-14llu %-14llu %c (%.2fx)\n", HOP[h], FMA[f], SETUP[s],
                       (unsigned long long)cyc[0], (unsigned long long)cyc[1], STRAT[w],
                       w ? (double)cyc[0] / cyc[1] : (double)cyc[1] / cyc[0]);
            }
    if (!rc)
        printf("strategy a faster in %d of 8 settings, b in %d (the clock scales seconds, not cycles: the ranking "
               "holds at %.2f and %.2f GHz alike)\n",
               wins[0], wins[1], p0.v[GPT2C_WSE_P_CLOCK], p0.v[GPT2C_WSE_P_CLOCK_ALT]);
    if (csv && fclose(csv) != 0 && !rc) rc = cli_error(CMD " sweep", "%s: write failed", path);
    gpt2c_model_free(model);
    return rc;
}

/* SUMMA vs MeshGEMM over P, and chain vs tree vs groups over line length */
static int cmd_kernels(int argc, char **argv) {
    const char *machine = "wse2", *fidelity = "flow";
    int tile = 14, pmax = 64, values = 0;
    cli_intlist groups = {{4, 16}, 2};
    cli_strlist set = {0};
    cli_opt opts[] = {{"--machine", CLI_STR, &machine, "wse2 | wse3", 0, 0},
                      {"--fidelity", CLI_STR, &fidelity, "flow | wavelet", 0, 0},
                      {"--tile", CLI_INT, &tile, "GEMM tile t (t x t fp32 per PE; the example uses 14)", 1, 64},
                      {"--max-grid", CLI_INT, &pmax, "largest P of the GEMM study (4, 8, ... P)", 4, 1024},
                      {"--values", CLI_FLAG, &values, "compute the GEMMs and report their error (P <= 32)", 0, 0},
                      {"--groups", CLI_INTLIST, &groups, "group counts of the two-phase reduction", 0, 0},
                      {"--set", CLI_STRLIST, &set, "name=value machine parameters", 0, 0}};
    int rc = cli_parse(CMD " kernels", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    wse_opts o;
    defaults(&o);
    o.machine = machine;
    o.fidelity = fidelity;
    o.set = set;
    o.mesh = "64x64";
    gpt2c_wse_params p;
    gpt2c_wse_run_cfg c;
    if ((rc = parse_common(CMD " kernels", &o, &p, &c))) return rc;
    printf("GEMM, %dx%d fp32 tiles per PE (cycles; comm = cycles - busiest PE's compute)\n", tile, tile);
    printf("%-5s %-9s %-10s %-10s %-10s %-9s %-7s %s\n", "P", "algo", "cycles", "compute", "comm", "hops/step", "colors", "max_rel_err");
    for (int P = 4; P <= pmax; P *= 2)
        for (int a = 0; a < 2; a++) {
            gpt2c_wse_kernel_row r;
            const char *al = a ? "meshgemm" : "summa";
            if (gpt2c_wse_gemm(&p, c.fidelity, al, P, tile, values && P <= 32, &r)) return cli_fail_status(CMD " kernels");
            printf("%-5d %-9s %-10llu %-10llu %-10llu %-9d %-7d ", P, al, (unsigned long long)r.cycles,
                   (unsigned long long)r.compute, (unsigned long long)r.comm, r.max_hops_per_step, r.colors_max);
            if (r.max_rel_err >= 0) printf("%.2g\n", r.max_rel_err);
            else printf("-\n");
        }
    {
        gpt2c_wse_kernel_row r;
        if (gpt2c_wse_example_residual(&p, 6, 4, &r)) return cli_fail_status(CMD " kernels");
        printf("\nresidual example (2x2 PEs, 6x4 tiles, ported task by task): %llu cycles, error %.2g\n",
               (unsigned long long)r.cycles, r.max_rel_err);
        if (gpt2c_wse_example_checkerboard(&p, 4, 4, 32, 16, &r)) return cli_fail_status(CMD " kernels");
        printf("gemv-checkerboard-pattern (4x4 PEs, 32x16 fp16, ported task by task): %llu cycles, error %.2g\n",
               (unsigned long long)r.cycles, r.max_rel_err);
        if (gpt2c_wse_gemv_example(&p, c.fidelity, 4, 8, 4, &r)) return cli_fail_status(CMD " kernels");
        printf("gemv-collectives_2d (4x4 PEs, 8x4 tiles): %llu cycles, error %.2g\n", (unsigned long long)r.cycles,
               r.max_rel_err);
    }
    printf("\nrow reduction of 64 wavelets per PE into the middle PE (cycles, colors per PE)\n%-6s %-14s", "P", "chain");
    printf("%-14s", "tree");
    for (int g = 0; g < groups.n; g++) printf("groups=%-7d", groups.items[g]);
    printf("\n");
    for (int P = 16; P <= 1024; P *= 2) {
        printf("%-6d", P);
        for (int a = 0; a < 2 + groups.n; a++) {
            gpt2c_wse_kernel_row r;
            gpt2c_wse_reduce alg = a == 0 ? GPT2C_WSE_CHAIN : a == 1 ? GPT2C_WSE_TREE : GPT2C_WSE_GROUPS;
            if (gpt2c_wse_reduce_study(&p, c.fidelity, alg, a >= 2 ? groups.items[a - 2] : 1, P, 64, &r))
                return cli_fail_status(CMD " kernels");
            char cell[32];
            snprintf(cell, sizeof cell, "%llu (%d)", (unsigned long long)r.cycles, r.colors_max);
            printf(" %-13s", cell);
        }
        printf("\n");
    }
    return 0;
}

int cmd_wse(int argc, char **argv) {
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        FILE *f = argc < 1 ? stderr : stdout;
        fprintf(f, "usage: gpt2c wse run|sweep|kernels [options]   (gpt2c wse run --help)\n"
                   "  run      GPT-2 on a simulated wafer-scale mesh: report.json, report.html, trace.json\n"
                   "  sweep    strategies a and b under hop x fma32_rate x setup (cost only)\n"
                   "  kernels  SUMMA vs MeshGEMM over P; chain vs tree vs group reductions over P\n");
        return argc < 1 ? 2 : -1;
    }
    if (!strcmp(argv[0], "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(argv[0], "sweep")) return cmd_sweep(argc - 1, argv + 1);
    if (!strcmp(argv[0], "kernels")) return cmd_kernels(argc - 1, argv + 1);
    return cli_error(CMD, "unknown subcommand '%s' (run, sweep, kernels)", argv[0]);
}
