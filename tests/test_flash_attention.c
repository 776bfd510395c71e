/* Flash attention over the KV cache (the cpu table's attention_kv_range on
 * AVX-512: online softmax over tiles of 256 keys) against the ref backend's
 * (double accumulation, two passes) on random caches: head sizes that are and
 * are not multiples of 16 and 64, batches at different positions, prefill and
 * decode, contexts longer than any score buffer would hold; and the values
 * of a query do not depend on how the tasks are split into ranges (prefill
 * in any chunking and decode agree bit for bit).  The bf16 cache: kv_write_bf16
 * (cpu = ref bit for bit, nearest-even rounding; kv_write too, on ragged shapes
 * and head ranges), and attention over it equals
 * the fp32 kernel over the same values widened, bit for bit (in ranges of 4
 * tasks, of 64 and all of them), and ref within the same tolerance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"
#include "gpt2c/cpu.h"
#include "gpt2c/dtype.h"
#include "kernels/kernels.h"
#include "testutil.h"

typedef void (*attn_fn)(float *, const float *, size_t, const float *, const float *, const int *, int, int, int, int,
                        int, long, long);

static void run_ranges(attn_fn f, float *out, const float *q, size_t qs, const float *kc, const float *vc,
                       const int *pos, int B, int Tq, int ctx, int C, int NH, int step) {
    const long tasks = (long)B * NH * Tq;
    for (long t0 = 0; t0 < tasks; t0 += step) f(out, q, qs, kc, vc, pos, B, Tq, ctx, C, NH, t0, t0 + step < tasks ? t0 + step : tasks);
}

static void check_case(attn_fn cpu, attn_fn ref, int B, int Tq, int ctx, int C, int NH, const int *pos) {
    const size_t qs = (size_t)3 * C + 5; /* a row stride that is not C */
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 11, (uint64_t)(B * 131 + Tq * 7 + ctx + C));
    float *q = malloc(sizeof(float) * (size_t)B * Tq * qs), *kc = malloc(sizeof(float) * (size_t)B * C * ctx);
    float *vc = malloc(sizeof(float) * (size_t)B * C * ctx);
    float *want = malloc(sizeof(float) * (size_t)B * Tq * C), *got = malloc(sizeof(float) * (size_t)B * Tq * C);
    float *got2 = malloc(sizeof(float) * (size_t)B * Tq * C);
    for (size_t i = 0; i < (size_t)B * Tq * qs; i++) q[i] = 2.0f * gpt2c_rng_normal(&r); /* peaked softmax too */
    for (size_t i = 0; i < (size_t)B * C * ctx; i++) kc[i] = gpt2c_rng_normal(&r), vc[i] = gpt2c_rng_normal(&r);
    run_ranges(ref, want, q, qs, kc, vc, pos, B, Tq, ctx, C, NH, 1 << 30);
    run_ranges(cpu, got, q, qs, kc, vc, pos, B, Tq, ctx, C, NH, 4);
    double worst = 0; /* per head of each query: max |difference| over that head's largest |output| */
    const int hs = C / NH;
    for (size_t i = 0; i < (size_t)B * Tq * NH; i++) {
        const double e = tu_max_rel_err(got + i * hs, want + i * hs, (size_t)hs, 1e-3);
        if (!(e <= worst)) worst = e;
    }
    printf("  B=%d Tq=%d ctx=%d C=%d NH=%d: max relative error %.2g\n", B, Tq, ctx, C, NH, worst);
    CHECK(worst < 1e-5); /* fp32 scores of up to 128 terms, then exp: ~1e-6 measured */
    /* the same tasks split differently (ranges of 3, then one range): bit for bit */
    run_ranges(cpu, got2, q, qs, kc, vc, pos, B, Tq, ctx, C, NH, 3);
    CHECK(memcmp(got, got2, sizeof(float) * (size_t)B * Tq * C) == 0);
    run_ranges(cpu, got2, q, qs, kc, vc, pos, B, Tq, ctx, C, NH, 1 << 30);
    CHECK(memcmp(got, got2, sizeof(float) * (size_t)B * Tq * C) == 0);
    /* decode: the last query of each sequence alone, as a one-token step at its position */
    if (Tq > 1) {
        int pos1[8];
        float *q1 = malloc(sizeof(float) * (size_t)B * qs), *o1 = malloc(sizeof(float) * (size_t)B * C);
        for (int b = 0; b < B; b++) {
            pos1[b] = pos[b] + Tq - 1;
            memcpy(q1 + (size_t)b * qs, q + ((size_t)b * Tq + Tq - 1) * qs, sizeof(float) * qs);
        }
        run_ranges(cpu, o1, q1, qs, kc, vc, pos1, B, 1, ctx, C, NH, 1);
        int same = 1;
        for (int b = 0; b < B; b++)
            same &= memcmp(o1 + (size_t)b * C, got + ((size_t)b * Tq + Tq - 1) * C, sizeof(float) * C) == 0;
        CHECK(same);
        free(q1), free(o1);
    }
    free(q), free(kc), free(vc), free(want), free(got), free(got2);
}

/* kv_write and kv_write_bf16 of the cpu table = ref's, byte for byte over the
 * whole caches (filled with a pattern first, so a write outside the positions
 * or heads asked for shows): token counts around the 16 x 16 transposes,
 * head sizes that are not multiples of 16, a range of heads, sequences at
 * their own positions, and the values bf16 rounding must get right. */
static void check_kv_write(const gpt2c_kernels *cpu, const gpt2c_kernels *ref, int B, int Tq, int ctx, int C, int NH,
                           const int *pos, int h0, int h1) {
    const size_t qs = (size_t)3 * C, cache = (size_t)B * C * ctx, nq = (size_t)B * Tq * qs;
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 13, (uint64_t)(B * 131 + Tq * 7 + ctx + C + h0));
    float *qkv = malloc(sizeof(float) * nq);
    for (size_t i = 0; i < nq; i++) qkv[i] = 3.0f * gpt2c_rng_normal(&r);
    const float special[] = {NAN, -NAN, INFINITY, -INFINITY, -0.0f, 1e-40f, -3e-39f, 3.4e38f, 1.0f + 1.0f / 256,
                             1.0f + 3.0f / 256, -(1.0f + 1.0f / 256)};
    for (size_t i = 0; i < nq; i += 7) qkv[i] = special[(i / 7) % (sizeof special / sizeof special[0])];
    float *kf = malloc(sizeof(float) * cache), *vf = malloc(sizeof(float) * cache);
    float *kfr = malloc(sizeof(float) * cache), *vfr = malloc(sizeof(float) * cache);
    uint16_t *k16 = malloc(2 * cache), *v16 = malloc(2 * cache), *k16r = malloc(2 * cache), *v16r = malloc(2 * cache);
    for (size_t i = 0; i < cache; i++) {
        kf[i] = kfr[i] = vf[i] = vfr[i] = (float)(i % 977) - 0.5f;
        k16[i] = k16r[i] = v16[i] = v16r[i] = (uint16_t)(0x1234 + i % 4099);
    }
    cpu->kv_write(kf, vf, qkv, pos, B, Tq, ctx, C, NH, h0, h1);
    ref->kv_write(kfr, vfr, qkv, pos, B, Tq, ctx, C, NH, h0, h1);
    cpu->kv_write_bf16(k16, v16, qkv, pos, B, Tq, ctx, C, NH, h0, h1);
    ref->kv_write_bf16(k16r, v16r, qkv, pos, B, Tq, ctx, C, NH, h0, h1);
    CHECK_MSG(memcmp(kf, kfr, sizeof(float) * cache) == 0 && memcmp(vf, vfr, sizeof(float) * cache) == 0,
              "kv_write B=%d Tq=%d ctx=%d C=%d NH=%d heads [%d, %d): cpu != ref", B, Tq, ctx, C, NH, h0, h1);
    CHECK_MSG(memcmp(k16, k16r, 2 * cache) == 0 && memcmp(v16, v16r, 2 * cache) == 0,
              "kv_write_bf16 B=%d Tq=%d ctx=%d C=%d NH=%d heads [%d, %d): cpu != ref", B, Tq, ctx, C, NH, h0, h1);
    free(qkv), free(kf), free(vf), free(kfr), free(vfr), free(k16), free(v16), free(k16r), free(v16r);
}

typedef void (*attn16_fn)(float *, const float *, size_t, const uint16_t *, const uint16_t *, const int *, int, int,
                          int, int, int, long, long);

/* A bf16 cache written through kv_write_bf16 (cpu and ref), then attention over it. */
static void check_bf16_case(const gpt2c_kernels *cpu, const gpt2c_kernels *ref, int B, int Tq, int ctx, int C, int NH,
                            const int *pos) {
    const size_t qs = (size_t)3 * C, cache = (size_t)B * C * ctx;
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 12, (uint64_t)(B * 131 + Tq * 7 + ctx + C));
    /* the rows written: every sequence's positions 0 .. pos[b]+Tq-1, in one kv_write of ctx rows at position 0 */
    float *qkv = malloc(sizeof(float) * (size_t)B * ctx * qs);
    uint16_t *k16 = calloc(cache, 2), *v16 = calloc(cache, 2), *k16r = calloc(cache, 2), *v16r = calloc(cache, 2);
    float *kf = malloc(sizeof(float) * cache), *vf = malloc(sizeof(float) * cache);
    float *want = malloc(sizeof(float) * (size_t)B * Tq * C), *got = malloc(sizeof(float) * (size_t)B * Tq * C);
    float *gotf = malloc(sizeof(float) * (size_t)B * Tq * C);
    for (size_t i = 0; i < (size_t)B * ctx * qs; i++) qkv[i] = 2.0f * gpt2c_rng_normal(&r);
    qkv[C] = 1.0f + 1.0f / 256; /* a tie halfway between two bf16 values: rounds to even (1.0) */
    qkv[C + 1] = 1.0f + 3.0f / 256; /* ... and to even upwards (1 + 4/256) */
    int zero[8] = {0};
    cpu->kv_write_bf16(k16, v16, qkv, zero, B, ctx, ctx, C, NH, 0, NH);
    ref->kv_write_bf16(k16r, v16r, qkv, zero, B, ctx, ctx, C, NH, 0, NH);
    CHECK(memcmp(k16, k16r, cache * 2) == 0 && memcmp(v16, v16r, cache * 2) == 0);
    CHECK(k16[0] == 0x3F80 && k16[ctx] == 0x3F82); /* the two ties above, key channels 0 and 1 of token 0 */
    CHECK(k16[1] == gpt2c_f32_to_bf16(qkv[qs + C]) && v16[0] == gpt2c_f32_to_bf16(qkv[2 * C]));
    for (size_t i = 0; i < cache; i++) {
        union { uint32_t u; float f; } a = {(uint32_t)k16[i] << 16}, b = {(uint32_t)v16[i] << 16};
        kf[i] = a.f, vf[i] = b.f;
    }
    /* queries: rows pos[b] .. pos[b]+Tq-1 of each sequence's qkv */
    float *q = malloc(sizeof(float) * (size_t)B * Tq * qs);
    for (int b = 0; b < B; b++)
        memcpy(q + (size_t)b * Tq * qs, qkv + ((size_t)b * ctx + pos[b]) * qs, sizeof(float) * Tq * qs);
    const long tasks = (long)B * NH * Tq;
    ref->attention_kv_bf16_range(want, q, qs, k16, v16, pos, B, Tq, ctx, C, NH, 0, tasks);
    for (long t0 = 0; t0 < tasks; t0 += 4)
        cpu->attention_kv_bf16_range(got, q, qs, k16, v16, pos, B, Tq, ctx, C, NH, t0, t0 + 4 < tasks ? t0 + 4 : tasks);
    run_ranges(cpu->attention_kv_range, gotf, q, qs, kf, vf, pos, B, Tq, ctx, C, NH, 4);
    const int hs = C / NH;
    double worst = 0;
    for (size_t i = 0; i < (size_t)B * Tq * NH; i++) {
        const double e = tu_max_rel_err(got + i * hs, want + i * hs, (size_t)hs, 1e-3);
        if (!(e <= worst)) worst = e;
    }
    printf("  bf16 cache B=%d Tq=%d ctx=%d C=%d NH=%d: max relative error %.2g against ref\n", B, Tq, ctx, C, NH, worst);
    CHECK(worst < 1e-5);
    CHECK(memcmp(got, gotf, sizeof(float) * (size_t)B * Tq * C) == 0); /* = the fp32 kernel on the widened values */
    /* ranges of 64 tasks and all of them: the same bits (a query's arithmetic does not depend on the range) */
    for (long step = 64; step <= tasks; step = step < tasks ? tasks : tasks + 1) {
        memset(got, 0, sizeof(float) * (size_t)B * Tq * C);
        for (long t0 = 0; t0 < tasks; t0 += step)
            cpu->attention_kv_bf16_range(got, q, qs, k16, v16, pos, B, Tq, ctx, C, NH, t0, t0 + step < tasks ? t0 + step : tasks);
        CHECK_MSG(memcmp(got, gotf, sizeof(float) * (size_t)B * Tq * C) == 0,
                  "bf16 cache B=%d Tq=%d ctx=%d C=%d NH=%d, ranges of %ld tasks: not the widened fp32 kernel's bits", B, Tq,
                  ctx, C, NH, step);
    }
    free(qkv), free(k16), free(v16), free(k16r), free(v16r), free(kf), free(vf), free(want), free(got), free(gotf), free(q);
}

int main(void) {
    const gpt2c_kernels *cpu = NULL, *ref = NULL;
    CHECK_OK(gpt2c_kernels_get("cpu", &cpu));
    CHECK_OK(gpt2c_kernels_get("ref", &ref));
    if (!cpu || !ref) return tu_finish("test_flash_attention");
    if (gpt2c_cpu_isa() != GPT2C_ISA_AVX512) printf("  no AVX-512 here: the cpu table's portable attention is checked\n");
    const int p0[4] = {0, 0, 0, 0}, p1[4] = {5, 0, 63, 17}, p2[2] = {70, 3};
    check_case(cpu->attention_kv_range, ref->attention_kv_range, 1, 37, 48, 96, 2, p0);   /* hs 48: masked lanes */
    check_case(cpu->attention_kv_range, ref->attention_kv_range, 4, 9, 96, 64, 1, p1);    /* hs 64, batch at positions */
    check_case(cpu->attention_kv_range, ref->attention_kv_range, 2, 130, 220, 240, 3, p2); /* hs 80, tiles + tails */
    check_case(cpu->attention_kv_range, ref->attention_kv_range, 1, 3, 200, 256, 2, p2);   /* hs 128: two passes */
    const int pedge[1] = {250}; /* a block of queries across the 256-key tile boundary */
    check_case(cpu->attention_kv_range, ref->attention_kv_range, 1, 8, 300, 128, 2, pedge);
    const int plong[1] = {4999};
    check_case(cpu->attention_kv_range, ref->attention_kv_range, 1, 2, 5003, 128, 2, plong); /* beyond 4096 keys */
    /* the cache writes: prefill blocks and tails, decode, ragged head sizes, head ranges */
    const int pw[3] = {0, 21, 5};
    check_kv_write(cpu, ref, 1, 512, 600, 768, 12, p0, 0, 12); /* GPT-2's heads, whole transposes */
    check_kv_write(cpu, ref, 3, 37, 80, 96, 2, pw, 0, 2);      /* hs 48, token tails, positions */
    check_kv_write(cpu, ref, 2, 1, 40, 64, 1, pw, 0, 1);       /* decode */
    check_kv_write(cpu, ref, 2, 19, 60, 60, 2, pw, 1, 2);      /* hs 30, one head of two */
    check_kv_write(cpu, ref, 1, 33, 64, 240, 3, pw, 1, 3);     /* hs 80 */
    /* a bf16 cache: masked head sizes, batches at positions, tiles with tails, decode */
    check_bf16_case(cpu, ref, 1, 37, 48, 96, 2, p0);
    check_bf16_case(cpu, ref, 4, 9, 96, 64, 1, p1);
    check_bf16_case(cpu, ref, 2, 130, 220, 240, 3, p2);
    check_bf16_case(cpu, ref, 1, 1, 300, 128, 2, pedge);
    return tu_finish("test_flash_attention");
}
