/* The CUDA attention kernels for 64-wide heads (src/kernels/cuda/
 * cuda_attention_tiled.cuh) on the CPU, in the SIMT emulator (simt/), against
 * ref: forward output, and the backward's dQ, dK and dV.  Every build runs it,
 * with or without CUDA: the kernels' indexing, masks and barriers are checked
 * on every CI machine, where test_cuda_ops needs a GPU.  Run twice by ctest,
 * the threads ascending and descending between barriers.
 * Tolerances as test_cuda_ops': 1e-5 forward, 1e-4 backward (relative to the
 * largest reference value). */
#include <stdio.h>

#include <algorithm>
#include <vector>

#include "simt/simt_emu.h"
#include "kernels/cuda/cuda_attention_tiled.cuh"

extern "C" {
#include "gpt2c/core.h"
#include "kernels/kernels.h"
}

/* the kernels' shared memory (extern __shared__ in the header) */
float4 att64_smem[(6 * ATT64_TILE + 2 * ATT64_ROWS) / 4];

static double max_rel_err(const float *got, const float *want, size_t n) {
    double top = 1e-6, worst = 0;
    for (size_t i = 0; i < n; i++) top = std::max(top, (double)fabsf(want[i]));
    for (size_t i = 0; i < n; i++) worst = std::max(worst, (double)fabsf(got[i] - want[i]));
    return worst / top;
}

int main() {
    const gpt2c_kernels *R;
    if (gpt2c_kernels_get("ref", &R) != GPT2C_OK) return 1;
    gpt2c_rng rng;
    gpt2c_rng_seed(&rng, 11, 0);
    /* (B, T, NH): one row, one tile exactly, ragged second tile, five tiles, several heads */
    const int shapes[][3] = {{1, 1, 1}, {1, 64, 1}, {2, 100, 2}, {1, 257, 3}, {2, 64, 12}};
    int failed = 0, checks = 0;
    for (const auto &sh : shapes) {
        const int B = sh[0], T = sh[1], NH = sh[2], C = ATT64_HS * NH;
        const size_t n3 = (size_t)B * T * 3 * C, n1 = (size_t)B * T * C, nrows = (size_t)B * NH * T;
        const float scale = 0.125f; /* 1 / sqrt(64) */
        std::vector<float> qkv(n3), dout(n1), out(n1), want_out(n1), lse(nrows), D(nrows);
        std::vector<float> state(R->attention_state_floats(B, T, NH)), scratch(R->attention_scratch_floats(B, T, NH) + 1);
        std::vector<float> dqkv(n3, 1e30f), want_dqkv(n3); /* every element is overwritten */
        for (float &x : qkv) x = gpt2c_rng_normal(&rng);
        for (float &x : dout) x = gpt2c_rng_normal(&rng);
        const simt_dim3 grid{(unsigned)((T + ATT64_ROWS - 1) / ATT64_ROWS), (unsigned)(B * NH), 1};

        R->attention_forward(want_out.data(), state.data(), qkv.data(), B, T, C, NH);
        simt_launch(grid, ATT64_THREADS, [&] { att64_forward_kernel(out.data(), lse.data(), qkv.data(), T, C, NH, scale); });
        const double e_fwd = max_rel_err(out.data(), want_out.data(), n1);

        for (int b = 0; b < B; b++) /* D = rowsum(dout * out), as cuda_attention.cu makes it */
            for (int h = 0; h < NH; h++)
                for (int t = 0; t < T; t++) {
                    const size_t o = ((size_t)b * T + t) * C + (size_t)h * ATT64_HS;
                    float s = 0.0f;
                    for (int d = 0; d < ATT64_HS; d++) s += dout[o + d] * out[o + d];
                    D[((size_t)b * NH + h) * T + t] = s;
                }
        R->attention_backward(want_dqkv.data(), scratch.data(), dout.data(), qkv.data(), want_out.data(), state.data(),
                              B, T, C, NH);
        simt_launch(grid, ATT64_THREADS, [&] {
            att64_backward_dq_kernel(dqkv.data(), dout.data(), qkv.data(), lse.data(), D.data(), T, C, NH, scale);
        });
        simt_launch(grid, ATT64_THREADS, [&] {
            att64_backward_dkv_kernel(dqkv.data(), dout.data(), qkv.data(), lse.data(), D.data(), T, C, NH, scale);
        });
        const double e_bwd = max_rel_err(dqkv.data(), want_dqkv.data(), n3);
        const bool ok = e_fwd <= 1e-5 && e_bwd <= 1e-4;
        printf("  %s B=%d T=%d NH=%d: forward rel err %.3g, backward %.3g\n", ok ? "ok  " : "FAIL", B, T, NH, e_fwd, e_bwd);
        failed += !ok;
        checks++;
    }
    printf("test_cuda_attention_emu: %d checks, %d failed\n", checks, failed);
    return failed ? 1 : 0;
}
