/* Attention over the KV cache runs in tasks: task = (b*NH + h)*Tq + t is
 * query t (of Tq) of head h of sequence b, which attends to keys
 * 0 .. pos[b] + t.  Where a task's data lie, in elements: shared by the ref
 * oracle and every cpu kernel over the cache (flash, two-pass, AVX2). */
#ifndef GPT2C_KERNELS_KV_TASK_H
#define GPT2C_KERNELS_KV_TASK_H

#include <stddef.h>

typedef struct {
    int b, h, t;
    int n;       /* keys it sees: 0 .. n-1 */
    size_t q, o; /* its query in q (rows qstride apart), its output in out (rows C apart) */
    size_t kv;   /* its head's keys (hs x ctx, transposed) and values (ctx x hs), each cache */
} gpt2c_kv_task;

static inline gpt2c_kv_task gpt2c_kv_task_at(long task, int Tq, int NH, int hs, int ctx, int C, size_t qstride,
                                             const int *pos) {
    gpt2c_kv_task k;
    k.t = (int)(task % Tq), k.h = (int)(task / Tq % NH), k.b = (int)(task / Tq / NH);
    k.n = pos[k.b] + k.t + 1;
    const size_t row = (size_t)k.b * Tq + k.t;
    k.q = row * qstride + (size_t)k.h * hs;
    k.o = row * (size_t)C + (size_t)k.h * hs;
    k.kv = ((size_t)k.b * NH + k.h) * hs * ctx;
    return k;
}

#endif
