/* A fake "device" backend for testing device plumbing without a GPU: its
 * memory is host memory it keeps a registry of, and its ops (ref underneath)
 * count every pointer they get that is not device memory.  Used by
 * test_cuda_memspace (the model's hooks) and by test_cuda_ops in its
 * GPT2C_FAKE_DEVICE=1 self-test mode (the harness itself, no GPU). */
#ifndef GPT2C_TEST_FAKE_DEVICE_H
#define GPT2C_TEST_FAKE_DEVICE_H

#include <stdio.h>
#include <string.h>

#include "gpt2c/core.h"
#include "gpt2c/profile.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"

/* ---- the fake device ---------------------------------------------------- */
#define MAXA 256
static struct {
    char *p;
    size_t n;
} allocs[MAXA];
static int nallocs, host_ptr_uses, h2d_calls, d2h_calls;

static int on_dev(const void *p) {
    for (int i = 0; i < MAXA; i++)
        if (allocs[i].p && (const char *)p >= allocs[i].p && (const char *)p < allocs[i].p + allocs[i].n) return 1;
    return 0;
}
static void dev(const void *p, const char *op) {
    if (p && !on_dev(p)) {
        host_ptr_uses++;
        fprintf(stderr, "  %s: got a host pointer\n", op);
    }
}
static void *f_alloc(size_t bytes, const char *what) {
    for (int i = 0; i < MAXA; i++)
        if (!allocs[i].p) {
            allocs[i].p = gpt2c_alloc(bytes ? bytes : 1, what);
            allocs[i].n = bytes ? bytes : 1;
            nallocs++;
            return allocs[i].p;
        }
    gpt2c_fail(GPT2C_ERR_NOMEM, "%s: fake device full", what);
    return NULL;
}
static void f_free(void *p) {
    for (int i = 0; i < MAXA; i++)
        if (allocs[i].p == p) {
            gpt2c_free(p);
            allocs[i].p = NULL;
            nallocs--;
            return;
        }
    host_ptr_uses++;
    fprintf(stderr, "  dev_free: not a device pointer\n");
}
static gpt2c_status f_h2d(void *dst, const void *src, size_t n) {
    dev(dst, "h2d dst");
    if (on_dev(src)) host_ptr_uses++;
    memcpy(dst, src, n);
    h2d_calls++;
    return GPT2C_OK;
}
static gpt2c_status f_d2h(void *dst, const void *src, size_t n) {
    dev(src, "d2h src");
    if (on_dev(dst)) host_ptr_uses++;
    memcpy(dst, src, n);
    d2h_calls++;
    return GPT2C_OK;
}
static gpt2c_status f_ok(void) { return GPT2C_OK; }
static gpt2c_status f_prof(struct gpt2c_profiler *p) {
    (void)p;
    return GPT2C_OK;
}
/* as the cuda backend's: refused when something else holds the hooks or the ext slot */
static gpt2c_status f_prof_attach(struct gpt2c_profiler *p) {
    if (p->on_begin || p->on_end || p->ext) return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "fake device: the profiler's hooks are in use");
    return GPT2C_OK;
}
static void f_prof_detach(struct gpt2c_profiler *p) { (void)p; }
/* the peaks the fake device claims: none unless a test sets them */
static double fake_matmul_flops, fake_mem_bytes_per_s;
static gpt2c_status f_peaks(gpt2c_device_peaks *out) {
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "fake device");
    out->fp32_flops = out->matmul_flops = fake_matmul_flops;
    snprintf(out->matmul_precision, sizeof out->matmul_precision, "fp32");
    out->mem_bytes_per_s = fake_mem_bytes_per_s;
    return GPT2C_OK;
}

#define D(p) dev(p, __func__)
static void f_enc_f(float *o, const int32_t *t, const float *wte, const float *wpe, int B, int T, int C) {
    D(o), D(t), D(wte), D(wpe);
    gpt2c_ref_encoder_forward(o, t, wte, wpe, B, T, C);
}
static void f_enc_b(float *dwte, float *dwpe, const float *d, const int32_t *t, int B, int T, int C) {
    D(dwte), D(dwpe), D(d), D(t);
    gpt2c_ref_encoder_backward(dwte, dwpe, d, t, B, T, C);
}
static void f_ln_f(float *o, float *m, float *r, const float *x, const float *w, const float *b, int N, int C) {
    D(o), D(m), D(r), D(x), D(w), D(b);
    gpt2c_ref_layernorm_forward(o, m, r, x, w, b, N, C);
}
static void f_ln_b(float *dx, float *dw, float *db, const float *d, const float *x, const float *w, const float *m,
                   const float *r, int N, int C) {
    D(dx), D(dw), D(db), D(d), D(x), D(w), D(m), D(r);
    gpt2c_ref_layernorm_backward(dx, dw, db, d, x, w, m, r, N, C);
}
static void f_rln(float *res, float *o, float *m, float *r, const float *a, const float *b, const float *w,
                  const float *bias, int N, int C) {
    D(res), D(o), D(m), D(r), D(a), D(b), D(w), D(bias);
    gpt2c_ref_residual_layernorm_forward(res, o, m, r, a, b, w, bias, N, C);
}
static void f_mm_f(float *o, const float *x, const gpt2c_tensor *w, const float *b, int N, int IC, int OC) {
    D(o), D(x), D(w->data), D(b);
    gpt2c_ref_matmul_forward(o, x, w, b, N, IC, OC);
}
static void f_mm_b(float *dx, float *dw, float *db, const float *d, const float *x, const gpt2c_tensor *w, int N,
                   int IC, int OC, int dw_acc) {
    D(dx), D(dw), D(db), D(d), D(x), D(w->data);
    gpt2c_ref_matmul_backward(dx, dw, db, d, x, w, N, IC, OC, dw_acc);
}
static void f_att_f(float *o, float *s, const float *qkv, int B, int T, int C, int NH) {
    D(o), D(s), D(qkv);
    gpt2c_ref_attention_forward(o, s, qkv, B, T, C, NH);
}
static void f_att_b(float *dqkv, float *sc, const float *d, const float *qkv, const float *o, const float *s, int B,
                    int T, int C, int NH) {
    D(dqkv), D(sc), D(d), D(qkv), D(o), D(s);
    gpt2c_ref_attention_backward(dqkv, sc, d, qkv, o, s, B, T, C, NH);
}
static void f_gelu_f(float *o, const float *x, size_t n) {
    D(o), D(x);
    gpt2c_ref_gelu_forward(o, x, n);
}
static void f_gelu_b(float *dx, const float *x, const float *d, size_t n) {
    D(dx), D(x), D(d);
    gpt2c_ref_gelu_backward(dx, x, d, n);
}
static void f_res(float *o, const float *a, const float *b, size_t n) {
    D(o), D(a), D(b);
    gpt2c_ref_residual_forward(o, a, b, n);
}
static void f_xent_f(float *l, float *p, const int32_t *t, int N, int V, int Vp) {
    D(l), D(p), D(t);
    gpt2c_ref_softmax_xent_forward(l, p, t, N, V, Vp);
}
static void f_xent_b(float *p, const int32_t *t, float dl, int N, int V, int Vp) {
    D(p), D(t);
    gpt2c_ref_softmax_xent_backward(p, t, dl, N, V, Vp);
}
static double f_sumsq(const float *x, size_t n) {
    D(x);
    return gpt2c_ref_sumsq(x, n);
}
static void f_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float b1, float b2, float eps,
                    float wd, float gs, int t) {
    D(p), D(g), D(m), D(v);
    gpt2c_ref_adamw(p, g, m, v, n, lr, b1, b2, eps, wd, gs, t);
}
static void f_zero(float *x, size_t n) {
    D(x);
    gpt2c_ref_zero(x, n);
}

static const gpt2c_kernels FAKE = {
    .name = "fakedev", .isa = "host",
    .encoder_forward = f_enc_f, .encoder_backward = f_enc_b,
    .layernorm_forward = f_ln_f, .layernorm_backward = f_ln_b, .residual_layernorm_forward = f_rln,
    .matmul_forward = f_mm_f, .matmul_backward = f_mm_b,
    .attention_state_floats = gpt2c_ref_attention_state_floats, .attention_forward = f_att_f,
    .attention_scratch_floats = gpt2c_ref_attention_scratch_floats, .attention_backward = f_att_b,
    .gelu_forward = f_gelu_f, .gelu_backward = f_gelu_b, .residual_forward = f_res,
    .softmax_xent_forward = f_xent_f, .softmax_xent_backward = f_xent_b,
    .sumsq = f_sumsq, .adamw = f_adamw, .zero = f_zero,
    .device_init = f_ok, .dev_alloc = f_alloc, .dev_free = f_free,
    .memcpy_h2d = f_h2d, .memcpy_d2h = f_d2h, .device_check = f_ok, .device_sync = f_ok,
    .prof_attach = f_prof_attach, .prof_resolve = f_prof, .prof_detach = f_prof_detach, .device_peaks = f_peaks,
};

#endif
