/* A vectorisable fp32 exp (the cpu backend's ops and the AVX2 inference
 * attention): plain C, so each ISA's build of a file vectorises it. */
#ifndef GPT2C_CPU_VEXP_H
#define GPT2C_CPU_VEXP_H

#include <math.h>
#include <stdint.h>

/* exp(x) for x in [-87.3, 88.7], relative error ~2 ulp, branch-free so it
 * vectorises: x = n ln2 + r with |r| <= ln2/2, e^r by a degree-6 polynomial,
 * 2^n put into the exponent bits.  Inputs below -87.3 give ~1e-38, not 0. */
static inline float vexp(float x) {
    x = x < -87.3f ? -87.3f : x; /* ternaries, not fminf: they map to vmaxps/vminps */
    x = x > 88.7f ? 88.7f : x;
    const float t = x * 1.44269504088896341f;
    /* round to nearest (1.5 * 2^23 trick): the sum's low mantissa bits are 0x400000 + n */
    union {
        float f;
        uint32_t u;
    } rn = {t + 12582912.0f};
    const float n = rn.f - 12582912.0f;
    float r = fmaf(n, -0.693145751953125f, x);       /* ln2 split in two for an exact n*ln2_hi */
    r = fmaf(n, -1.428606765330187045e-06f, r);
    float p = 1.0f / 720.0f;
    p = fmaf(p, r, 1.0f / 120.0f);
    p = fmaf(p, r, 1.0f / 24.0f);
    p = fmaf(p, r, 1.0f / 6.0f);
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    /* 2^n: n + 127 in the exponent bits, in unsigned arithmetic (no float->int
     * conversion, no signed shift: NaN input stays defined and gives NaN) */
    union {
        uint32_t u;
        float f;
    } s;
    s.u = (rn.u - 0x4B400000u + 127u) << 23;
    return p * s.f;
}

#endif
