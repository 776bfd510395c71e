/* The bf16 engine's rule (kernels/cpu/bf16_engine.h) on injected rates, and
 * its choice on this CPU: never vdpbf16ps where the CPU lacks AVX512_BF16,
 * and the GEMM's kernel follows the choice.  (The measured, cached choice on
 * an AVX512_BF16 CPU: tests/cli_bf16_engine.sh.) */
#include <stdio.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "kernels/cpu/amx.h"
#include "kernels/cpu/bf16_engine.h"
#include "kernels/cpu/gemm_bf16.h"
#include "testutil.h"

int main(void) {
    CHECK(gpt2c_cpu_bf16_prefer_dp(2 * 121.0, 121.0) == 1); /* Zen 4: twice the FMAs' FLOP/s */
    CHECK(gpt2c_cpu_bf16_prefer_dp(81.5, 169.5) == 0);          /* model 207: about half */
    CHECK(gpt2c_cpu_bf16_prefer_dp(100.0, 100.0) == 1);        /* a tie: no expansion to pay */
    CHECK(gpt2c_cpu_bf16_prefer_dp(0.0, 100.0) == 0);          /* not measured: never */
    CHECK(gpt2c_cpu_bf16_engine_note()[0] == 0);               /* nothing decided yet */
    const int dp = gpt2c_cpu_bf16_use_dp();
    printf("this CPU: %s\n", gpt2c_cpu_bf16_engine_note());
    CHECK(gpt2c_cpu_bf16_engine_note()[0] != 0);
    if (!gpt2c_cpu_has_avx512bf16()) CHECK(dp == 0);
    CHECK(gpt2c_cpu_bf16_use_dp() == dp); /* decided once */
    if (gpt2c_cpu_isa() == GPT2C_ISA_AVX512)
        CHECK(strcmp(gpt2c_cpu_gemm_bf16_kernel(GPT2C_ISA_AVX512)->name, dp ? "avx512bf16" : "avx512f-fp32") == 0);
    CHECK(gpt2c_cpu_bf16_prefer_amx(900.0, 150.0) == 1); /* the tiles faster */
    CHECK(gpt2c_cpu_bf16_prefer_amx(100.0, 150.0) == 0); /* slower (e.g. a throttled core): the pair engine */
    CHECK(gpt2c_cpu_bf16_prefer_amx(0.0, 0.0) == 0);     /* not measured: never */
    /* AMX: never where the CPU or OS cannot run it (unless emulated, by request), decided once */
    const char *why = "", *env = getenv("GPT2C_BF16_ENGINE");
    const int emulated = env && strcmp(env, "amx-emulated") == 0;
    CHECK(gpt2c_cpu_bf16_amx_note()[0] == 0);
    const gpt2c_amx_tiles *t = gpt2c_cpu_bf16_amx();
    printf("bf16 GEMM: %s\n", gpt2c_cpu_bf16_amx_note());
    CHECK(gpt2c_cpu_bf16_amx_note()[0] != 0);
    if (emulated) CHECK(t == &gpt2c_amx_tiles_emulated && !gpt2c_cpu_bf16_amx_hw());
    else if (!gpt2c_cpu_amx_usable(&why)) CHECK_MSG(t == NULL, "AMX tiles chosen where they cannot run (%s)", why);
    CHECK(gpt2c_cpu_bf16_amx() == t);
    return tu_finish("test_bf16_engine");
}
