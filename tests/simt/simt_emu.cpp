/* The emulator's scheduler (simt_emu.h).  Every thread of a block has its
 * own stack and context; the scheduler resumes each runnable thread until it
 * waits (barrier, shuffle) or ends, then releases whatever can go on: a warp
 * whose live lanes all wait at a shuffle, else the block when every live
 * thread waits at __syncthreads. */
#include "simt/simt_emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <vector>

simt_dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace {
enum State { RUNNABLE, AT_BARRIER, AT_SHUFFLE, ENDED };
struct Thread {
    ucontext_t ctx;
    State state;
    std::vector<char> stack;
};
std::vector<Thread> threads;
ucontext_t scheduler;
unsigned current;
const std::function<void()> *kernel_body;
float shuffle_slots[32][32]; /* [warp][lane] */

void wait_as(State s) {
    threads[current].state = s;
    swapcontext(&threads[current].ctx, &scheduler);
}
void thread_main() {
    (*kernel_body)();
    wait_as(ENDED);
}
[[noreturn]] void stuck(const char *why) {
    fprintf(stderr, "simt_emu: block (%u,%u): %s\n", blockIdx.x, blockIdx.y, why);
    exit(3);
}
} // namespace

void __syncthreads() { wait_as(AT_BARRIER); }

float __shfl_xor_sync(unsigned, float v, int lane_mask) {
    const unsigned lane = current & 31, warp = current >> 5;
    shuffle_slots[warp][lane] = v;
    wait_as(AT_SHUFFLE); /* every lane has written */
    const float got = shuffle_slots[warp][lane ^ (unsigned)lane_mask];
    wait_as(AT_SHUFFLE); /* every lane has read: the slots may be reused */
    return got;
}

void simt_launch(simt_dim3 grid, unsigned nthreads, const std::function<void()> &body) {
    if (nthreads == 0 || nthreads % 32 || nthreads > 1024) stuck("threads per block must be a multiple of 32, <= 1024");
    const bool reverse = getenv("SIMT_EMU_REVERSE") != nullptr;
    kernel_body = &body;
    gridDim = grid;
    blockDim = simt_dim3{nthreads, 1, 1};
    threads.resize(nthreads);
    for (Thread &t : threads) t.stack.resize(256 * 1024);
    for (unsigned by = 0; by < grid.y; by++)
        for (unsigned bx = 0; bx < grid.x; bx++) {
            blockIdx = simt_dim3{bx, by, 0};
            for (Thread &t : threads) {
                getcontext(&t.ctx);
                t.ctx.uc_stack.ss_sp = t.stack.data();
                t.ctx.uc_stack.ss_size = t.stack.size();
                t.ctx.uc_link = nullptr;
                makecontext(&t.ctx, thread_main, 0);
                t.state = RUNNABLE;
            }
            for (;;) {
                for (unsigned k = 0; k < nthreads; k++) {
                    current = reverse ? nthreads - 1 - k : k;
                    if (threads[current].state != RUNNABLE) continue;
                    threadIdx = simt_dim3{current, 0, 0};
                    swapcontext(&scheduler, &threads[current].ctx);
                }
                bool released = false;
                for (unsigned w = 0; w < nthreads / 32; w++) {
                    int shuffling = 0, ended = 0;
                    for (unsigned l = 0; l < 32; l++) {
                        shuffling += threads[w * 32 + l].state == AT_SHUFFLE;
                        ended += threads[w * 32 + l].state == ENDED;
                    }
                    if (!shuffling) continue;
                    if (shuffling + ended != 32) stuck("a warp's lanes met a shuffle and a barrier");
                    for (unsigned l = 0; l < 32; l++)
                        if (threads[w * 32 + l].state == AT_SHUFFLE) threads[w * 32 + l].state = RUNNABLE;
                    released = true;
                }
                if (released) continue;
                bool all_ended = true;
                for (Thread &t : threads) all_ended = all_ended && t.state == ENDED;
                if (all_ended) break;
                for (Thread &t : threads) /* only barriers and ends are left: the barrier opens */
                    if (t.state == AT_BARRIER) t.state = RUNNABLE;
            }
        }
}
