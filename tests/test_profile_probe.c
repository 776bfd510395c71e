/* The profile's in-L2 GEMM probe findings (and the bf16 bound, last) on hand-made statistics: the
 * matmuls' FLOP-weighted % probe, the probe's share of the fp32 peak (a bf16
 * run's: of the bf16 roof) on as many threads (a probe on 1 thread against a
 * 2-thread peak is not a slow machine), and which diagnosis each case gets.  The numbers are round so the
 * expected figures can be worked out in the comments. */
#include "gpt2c/core.h"
#include "profile/session.h"
#include "testutil.h"

#define NEAR(a, b) (fabs((a) - (b)) < 1e-9)

static void set(gpt2c_profile_session *s, int g, int f, double v) { s->stats[g * F_COUNT + f] = (gpt2c_stat){v, 0, v, v, 1}; }

/* two matmul ops: qkv 2 GFLOP in 20 ms (100 GFLOP/s), fc 6 GFLOP in 40 ms (150 GFLOP/s), 10 calls each */
static void matmuls(gpt2c_profile_session *s, double probe) {
    const int ops[2] = {GPT2C_OP_MATMUL_QKV, GPT2C_OP_MATMUL_FC};
    const double flops[2] = {2e9, 6e9}, ms[2] = {20, 40};
    for (int i = 0; i < 2; i++) {
        const int g = G_OP0 + ops[i];
        set(s, g, F_FLOPS, flops[i]), set(s, g, F_MS, ms[i]), set(s, g, F_CALLS, 10);
        set(s, g, F_GFLOPS, flops[i] / (ms[i] * 1e6));
        set(s, g, F_PCT_PROBE, 100 * flops[i] / (ms[i] * 1e6) / probe);
    }
    set(s, G_STEP, F_PROBE, probe);
    set(s, G_STEP, F_PCT_PROBE, 100 * 8e9 / 60e6 / probe); /* all matmuls: 133.3 GFLOP/s over the probe */
}

/* the finding containing `what`, or NULL */
static const char *find_line(gpt2c_profile_session *s, char lines[][512], int n, const char *what) {
    n = gpt2c_prof_findings(s, lines, n);
    for (int i = 0; i < n; i++)
        if (strstr(lines[i], what)) return lines[i];
    return NULL;
}

/* the probe finding's line, or NULL */
static const char *probe_line(gpt2c_profile_session *s, char lines[][512], int n) {
    n = gpt2c_prof_findings(s, lines, n);
    for (int i = 0; i < n; i++)
        if (strstr(lines[i], "of the in-L2 GEMM probe")) return lines[i];
    return NULL;
}

int main(void) {
    static gpt2c_profile_session s;
    static char lines[16][512];
    s.stats = calloc(M_COUNT, sizeof *s.stats);
    if (!s.stats) return 1;

    /* no probe: no finding, no share */
    CHECK(probe_line(&s, lines, 16) == NULL);
    CHECK(gpt2c_prof_probe_peak_share(&s) == 0);

    /* probe 200 GFLOP/s, no peak: matmuls 8 GFLOP in 60 ms = 133.3 GFLOP/s = 66.7% of it (qkv 50%, fc 75%);
     * over 20 MFLOP a call (400), so the hierarchy costs 33% */
    matmuls(&s, 200);
    s.probe_threads = 2;
    const char *l = probe_line(&s, lines, 16);
    CHECK(l && strstr(l, "matmuls run at 66.7% of the in-L2 GEMM probe"));
    CHECK(l && strstr(l, "(50.0-75.0% per op)"));
    CHECK(l && strstr(l, "cost them 33%"));
    CHECK(l && !strstr(l, "ran slowly") && !strstr(l, "of the fp32 peak"));
    CHECK(gpt2c_prof_probe_peak_share(&s) == 0); /* no peak */

    /* a 2-thread peak of 300: the probe at 200 is 66.7% of it, below 75%: the machine ran slowly */
    s.have_peak = 1, s.peak.gflops = 300, s.peak.threads = 2;
    CHECK(NEAR(gpt2c_prof_probe_peak_share(&s), 200.0 / 300));
    l = probe_line(&s, lines, 16);
    CHECK(l && strstr(l, "probe at 67% of the fp32 peak"));
    CHECK(l && strstr(l, "ran slowly here") && strstr(l, "cost them 33%"));

    /* the same probe on 1 thread against that 2-thread peak: 200 / 150 -> not slow (share 1.33) */
    s.probe_threads = 1;
    CHECK(NEAR(gpt2c_prof_probe_peak_share(&s), 200.0 / 150));
    l = probe_line(&s, lines, 16);
    CHECK(l && !strstr(l, "ran slowly"));

    /* matmuls at 90% of a probe at 90% of peak: near the micro-kernel's rate, nothing else said */
    s.probe_threads = 2;
    matmuls(&s, 133.3333333333 / 0.9);
    s.peak.gflops = 133.3333333333 / 0.9 / 0.9;
    l = probe_line(&s, lines, 16);
    CHECK(l && strstr(l, "matmuls run at 90.0%") && strstr(l, "near the micro-kernel's in-cache rate"));
    CHECK(l && !strstr(l, "ran slowly") && !strstr(l, "cost them"));

    /* matmuls at 87% of a probe at 99% of peak: the kernel is near peak, so the 13% below the probe is what
     * is left (it was said to be "the micro-kernel itself") */
    matmuls(&s, 133.3333333333 / 0.87);
    s.peak.gflops = 133.3333333333 / 0.87 / 0.99;
    l = probe_line(&s, lines, 16);
    CHECK(l && strstr(l, "matmuls run at 87.0%") && strstr(l, "probe at 99% of the fp32 peak"));
    CHECK(l && strstr(l, "the micro-kernel runs near peak in cache") && strstr(l, "cost the matmuls 13%"));
    CHECK(l && !strstr(l, "what is left to peak is the micro-kernel itself") && !strstr(l, "ran slowly"));

    /* small GEMMs (8 GFLOP in 2 x 2000 calls: 2 MFLOP a call, under 20): overheads, not the hierarchy */
    matmuls(&s, 200);
    set(&s, G_OP0 + GPT2C_OP_MATMUL_QKV, F_CALLS, 2000), set(&s, G_OP0 + GPT2C_OP_MATMUL_FC, F_CALLS, 2000);
    s.peak.gflops = 220;
    l = probe_line(&s, lines, 16);
    CHECK(l && strstr(l, "small GEMMs (2.0 MFLOP a call)") && !strstr(l, "cost them"));

    /* a bf16 run: the probe is the bf16 pair engine's, held to the bf16 roof (600 on 2 threads), not the fp32
     * peak (220): at 200 it is 33% of it, a slow machine; without a roof, the fp32 peak again (91%) */
    matmuls(&s, 200); /* 10 calls each again: not small GEMMs */
    s.bf16_matmuls = 1, s.bf16_roof = 600;
    CHECK(NEAR(gpt2c_prof_probe_roof(&s), 600));
    CHECK(NEAR(gpt2c_prof_probe_peak_share(&s), 200.0 / 600));
    l = probe_line(&s, lines, 16);
    CHECK(l && strstr(l, "probe at 33% of the bf16 peak") && strstr(l, "ran slowly here"));
    CHECK(l && strstr(l, "cost them 33% -> gpt2c bench gemm --precision bf16")); /* not the fp32-only script */
    s.bf16_roof = 0;
    CHECK(NEAR(gpt2c_prof_probe_peak_share(&s), 200.0 / 220));
    s.bf16_matmuls = 0;

    /* the bf16 bound: a step of 100 ms whose matmuls (8 GFLOP, 60 ms: 133 GFLOP/s) run on a 400 GFLOP/s bf16
     * roof (33%); the other 40 ms (optimizer 25, attention core 5, the rest 10) stay, so at the roof the step
     * would take 40 + 8e9 / 400e9 s = 60 ms: 0.60x.  Not said for fp32, nor without a peak. */
    matmuls(&s, 200);
    set(&s, G_STEP, F_MS, 100);
    set(&s, G_PHASE0 + GPT2C_PHASE_OPTIMIZER, F_MS, 25);
    set(&s, G_OP0 + GPT2C_OP_ATTENTION, F_MS, 5);
    s.bf16_matmuls = 1, s.bf16_roof = 400;
    const char *b = find_line(&s, lines, 16, "bf16 bound:");
    CHECK(b && strstr(b, "the matmuls are 60.0% of the step (60.0 ms at 133 GFLOP/s, 33% of the bf16 roof)"));
    CHECK(b && strstr(b, "the other 40.0 ms (optimizer 25.0, attention core 5.0, the rest 10.0)"));
    CHECK(b && strstr(b, "would still take 60.0 ms (0.60x of now)"));
    s.bf16_matmuls = 0;
    CHECK(find_line(&s, lines, 16, "bf16 bound:") == NULL);
    s.bf16_matmuls = 1, s.have_peak = 0;
    CHECK(find_line(&s, lines, 16, "bf16 bound:") == NULL);
    s.bf16_matmuls = 0, s.have_peak = 1, s.bf16_roof = 0;

    /* the attention core (5 ms of the 100 ms step above) at 50 GFLOP/s: its advice follows what the backend
     * does.  A tiled (flash-style) attention is not told to become one, and its rate is held to the engine
     * of its products: the fp32 peak (220), or the bf16 roof (400) where it multiplies in bf16 */
    set(&s, G_OP0 + GPT2C_OP_ATTENTION, F_GFLOPS, 50);
    s.attention_tiled = 1;
    const char *a = find_line(&s, lines, 16, "attention core (softmax");
    CHECK(a && strstr(a, "5.0% of the step at T=") && strstr(a, "at 50 GFLOP/s = 23% of its 220 GFLOP/s roof"));
    CHECK(a && strstr(a, "already tiled") && !strstr(a, "fused (flash-style) attention for long"));
    s.bf16_matmuls = 1, s.bf16_attention = 1, s.bf16_roof = 400;
    a = find_line(&s, lines, 16, "attention core (softmax");
    CHECK_MSG(a && strstr(a, "= 12% of its 400 GFLOP/s roof"), "%s", a ? a : "(none)");
    s.bf16_matmuls = 0, s.bf16_attention = 0, s.bf16_roof = 0, s.attention_tiled = 0;
    a = find_line(&s, lines, 16, "attention core (softmax");
    CHECK(a && strstr(a, "fused (flash-style) attention for long sequences") && !strstr(a, "already tiled"));

    /* the optimizer (25 ms of the 100 ms step) moving 1.25 GB: 50 GB/s against a 100 GB/s memory roof */
    set(&s, G_PHASE0 + GPT2C_PHASE_OPTIMIZER, F_GBS, 50);
    s.peak.mem_gbs = 100;
    const char *o = find_line(&s, lines, 16, "optimizer is");
    CHECK_MSG(o && strstr(o, "optimizer is 25.0% of the step (25.0 ms") && strstr(o, "at 50.0 GB/s = 50% of the 100.0 GB/s memory roof"),
              "%s", o ? o : "(none)");

    /* the memory probe beside the trials: read stream 40, update 60 GB/s (the faster: 60), against that 100 GB/s
     * roof.  The grad norm reading at 36 GB/s is at 90% of the read stream, AdamW at 57 at 95% of the update
     * stream, each over the stream of its own pattern (session.c's finish_trial sets those; here by hand); at 60%
     * of the roof the memory was slow, which is said */
    CHECK(find_line(&s, lines, 16, "the memory gave") == NULL); /* no probe: nothing said */
    CHECK(gpt2c_prof_op_reads(GPT2C_OP_GRAD_NORM) && gpt2c_prof_op_reads(GPT2C_OP_MATMUL_LMHEAD) && !gpt2c_prof_op_reads(GPT2C_OP_ADAMW));
    set(&s, G_STEP, F_MEM_READ, 40), set(&s, G_STEP, F_MEM_UPDATE, 60), set(&s, G_STEP, F_MEM_PROBE, 60);
    set(&s, G_OP0 + GPT2C_OP_GRAD_NORM, F_PCT_MEM_PROBE, 90), set(&s, G_OP0 + GPT2C_OP_ADAMW, F_PCT_MEM_PROBE, 95);
    o = find_line(&s, lines, 16, "optimizer is");
    CHECK_MSG(o && strstr(o, "at 50.0 GB/s = 50% of the 100.0 GB/s memory roof; beside the trials the grad norm read at 90% of the read "
                             "stream (40.0 GB/s), AdamW at 95% of the update stream (60.0 GB/s))"),
              "%s", o ? o : "(none)");
    const char *mp = find_line(&s, lines, 16, "the memory gave");
    CHECK_MSG(mp && strstr(mp, "the memory gave 60.0 GB/s beside the trials (60.0-60.0), 60% of its cached 100.0 GB/s roof") &&
                  strstr(mp, "compare those by % mem probe"),
              "%s", mp ? mp : "(none)");
    /* at 80% of the roof (above 75%) the memory is not called slow */
    set(&s, G_STEP, F_MEM_PROBE, 80);
    CHECK(find_line(&s, lines, 16, "the memory gave") == NULL);
    /* without the ops' figures, nothing of the probe in the optimizer's line */
    s.stats[(G_OP0 + GPT2C_OP_GRAD_NORM) * F_COUNT + F_PCT_MEM_PROBE].n = 0;
    o = find_line(&s, lines, 16, "optimizer is");
    CHECK_MSG(o && strstr(o, "memory roof) ->"), "%s", o ? o : "(none)");

    /* inside the matmuls (the cpu GEMMs' split), 2 threads: qkv 20 ms (40 thread-ms) with 30 in the kernel (75%)
     * and 4 packing (10%); fc 40 ms (80) with 64 (80%) and 8 (10%); together 60 ms, 94 of 120 thread-ms in the
     * kernel (78.3%), 12 packing (10%), the rest 11.7%; their 8 GFLOP in 94 / 2 = 47 ms of kernel per thread:
     * 170.2 GFLOP/s while it runs, 77.4% of a 220 roof (under it), 94.6% of a 180 one (at it) */
    CHECK(find_line(&s, lines, 16, "inside the matmuls") == NULL); /* no split: nothing said */
    s.nthreads = 2, s.peak.gflops = 220, s.have_peak = 1, s.bf16_matmuls = 0;
    const int qkv = G_OP0 + GPT2C_OP_MATMUL_QKV, fc = G_OP0 + GPT2C_OP_MATMUL_FC;
    set(&s, qkv, F_MS, 20), set(&s, qkv, F_KERN_MS, 30), set(&s, qkv, F_PACK_MS, 4), set(&s, qkv, F_FLOPS, 2e9);
    set(&s, fc, F_MS, 40), set(&s, fc, F_KERN_MS, 64), set(&s, fc, F_PACK_MS, 8), set(&s, fc, F_FLOPS, 6e9);
    gpt2c_matmul_split ms;
    CHECK(gpt2c_prof_matmul_split(&s, &ms) == 1);
    CHECK(NEAR(ms.ms, 60) && NEAR(ms.pct_kernel, 100 * 94.0 / 120) && NEAR(ms.pct_pack, 10));
    CHECK(NEAR(ms.kernel_gflops, 8e9 / 0.047 * 1e-9) && fabs(ms.pct_roof - 100 * 8e9 / 0.047 * 1e-9 / 220) < 1e-9);
    const char *in = find_line(&s, lines, 16, "inside the matmuls");
    CHECK_MSG(in && strstr(in, "inside the matmuls (60.0 ms; thread time, cpu GEMMs): 78.3% in the micro-kernel, at 170 GFLOP/s while it "
                               "runs = 77.4% of their roof; 10.0% packing operands; 11.7% the rest") &&
                  strstr(in, "the largest loss is the kernel's own rate (17.7% of the thread time lost under its roof"),
              "%s", in ? in : "(none)");
    /* 180 roof and qkv packing 10 thread-ms: the kernel loses 78.3% x 5.4% = 4.2%, packing 18 / 120 = 15%, the rest 6.7% */
    s.peak.gflops = 180;
    set(&s, qkv, F_PACK_MS, 10);
    in = find_line(&s, lines, 16, "inside the matmuls");
    CHECK_MSG(in && strstr(in, "= 94.6% of their roof") && strstr(in, "the largest loss is packing (weight blocks"),
              "%s", in ? in : "(none)");
    /* most of the time waiting: qkv now 10 thread-ms in the kernel and 2 packing, so 74 of 120 in the kernel
     * (61.7%, at 8 GFLOP in 37 ms: over the roof, no loss), 10 packing (8.3%), the rest 30% */
    set(&s, qkv, F_KERN_MS, 10), set(&s, qkv, F_PACK_MS, 2);
    in = find_line(&s, lines, 16, "inside the matmuls");
    CHECK_MSG(in && strstr(in, "30.0% the rest") && strstr(in, "the largest loss is the rest: threads waiting"), "%s", in ? in : "(none)");

    /* a device's nominal peak is not compared with the CPU probe */
    s.peak_device = 1;
    CHECK(gpt2c_prof_probe_peak_share(&s) == 0);
    free(s.stats);
    return tu_finish("test_profile_probe");
}
