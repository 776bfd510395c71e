/* The model's device-memory plumbing, tested without a GPU: a fake "device"
 * backend whose memory is host memory it keeps a registry of, and whose ops
 * (ref underneath) check that every pointer they get is device memory.  A
 * model on it must give bit-identical results to a host model on ref, touch
 * the device only through the hooks (a host pointer handed to an op fails the
 * test), copy only what a step needs, and move its slabs back and forth. */
#include <unistd.h>

#include "fake_device.h"
#include "gpt2c/profile_session.h"
#include "profile/session.h"
#include "gpt2c/io.h"
#include "gpt2c/model.h"
#include "kernels/kernels.h"
#include "testutil.h"
#include "grads_fresh.h"
#include "model/model_internal.h"

/* ---- the test ----------------------------------------------------------- */
/* Whole file into a malloc'd buffer (*n bytes); NULL if unreadable. */
static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(len > 0 ? (size_t)len : 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

/* Saving a model that lives on the device writes the same bytes as saving
 * its host twin (writers read slabs through gpt2c_model_slab_to_host). */
static void check_save_same(gpt2c_model *host, gpt2c_model *devm) {
    char ph[64], pd[64];
    snprintf(ph, sizeof ph, "/tmp/gpt2c_memspace_%d_h", (int)getpid());
    snprintf(pd, sizeof pd, "/tmp/gpt2c_memspace_%d_d", (int)getpid());
#ifdef GPT2C_HAVE_JANSSON
    const int first = 0;
#else
    const int first = 1; /* safetensors needs jansson: the llm.c format only */
#endif
    for (int fmt = first; fmt < 2; fmt++) {
        /* fake device memory is host-readable, so also count the downloads:
         * a writer reading device pointers directly would copy nothing */
        d2h_calls = 0;
        if (fmt == 0) {
            CHECK_OK(gpt2c_model_save(host, ph, NULL, 0, 1));
            CHECK_OK(gpt2c_model_save(devm, pd, NULL, 0, 1));
            CHECK_MSG(d2h_calls == 3, "safetensors save: %d downloads (want 3: params, m, v)", d2h_calls);
        } else {
            CHECK_OK(gpt2c_model_save_llmc(host, ph, 3));
            CHECK_OK(gpt2c_model_save_llmc(devm, pd, 3));
            CHECK_MSG(d2h_calls == 1, "llm.c save: %d downloads (want 1: params)", d2h_calls);
        }
        size_t nh = 0, nd = 0;
        char *bh = slurp(ph, &nh), *bd = slurp(pd, &nd);
        CHECK_MSG(bh && bd && nh == nd && nh > 0 && memcmp(bh, bd, nh) == 0, "%s save differs on the device",
                  fmt ? "llm.c" : "safetensors");
        free(bh), free(bd);
        remove(ph), remove(pd);
    }
}

enum { B = 2, T = 6 };
static const gpt2c_config CFG = {.max_seq_len = 8, .vocab_size = 13, .num_layers = 2, .num_heads = 2, .channels = 8};

int main(void) {
    CHECK(gpt2c_kernels_first_null(&FAKE) == -1);
    int32_t x[B * T], y[B * T];
    gpt2c_rng r;
    gpt2c_rng_seed(&r, 3, 0);
    for (int i = 0; i < B * T; i++) {
        x[i] = (int32_t)(gpt2c_rng_u64(&r) % 13);
        y[i] = (int32_t)(gpt2c_rng_u64(&r) % 13);
    }
    gpt2c_model *a, *b;
    CHECK_OK(gpt2c_model_create(&CFG, &a));
    CHECK_OK(gpt2c_model_create(&CFG, &b));
    CHECK_OK(gpt2c_model_set_backend(a, "ref"));
    gpt2c_model_init_random(a, 42);
    /* b goes to the device first and is initialised there (host mirror + upload) */
    CHECK_OK(gpt2c_model_use_kernels(b, &FAKE));
    CHECK(on_dev(b->params_mem) && b->params_host && !on_dev(b->params_host));
    gpt2c_model_init_random(b, 42);
    float *hb = NULL;
    const size_t bytes = a->slab_floats * sizeof(float);
    CHECK_OK(gpt2c_model_params_host(b, &hb));
    CHECK(hb == b->params_host && memcmp(hb, a->params_mem, bytes) == 0);

    gpt2c_adamw_cfg opt = {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f, .grad_clip = 1.0f};
    float *g = malloc(bytes);
    for (int step = 0; step < 2; step++) {
        float la = 0, lb = 0, na = 0, nb = 0;
        gpt2c_model_zero_grad(a);
        gpt2c_model_zero_grad(b);
        CHECK_OK(gpt2c_model_forward(a, x, y, B, T, &la));
        h2d_calls = d2h_calls = 0;
        CHECK_OK(gpt2c_model_forward(b, x, y, B, T, &lb));
        CHECK_MSG(la == lb, "step %d: loss %.9g vs %.9g", step, la, lb);
        CHECK_MSG(h2d_calls == 2 && d2h_calls == 1, "forward copies: %d up (want 2: tokens, targets), %d down (want 1: losses)",
                  h2d_calls, d2h_calls);
        CHECK(memcmp(gpt2c_model_losses(a), gpt2c_model_losses(b), sizeof(float) * B * T) == 0);
        CHECK(!on_dev(gpt2c_model_losses(b)));
        CHECK_OK(gpt2c_model_backward(a, 1.0f));
        h2d_calls = d2h_calls = 0;
        CHECK_OK(gpt2c_model_backward(b, 1.0f));
        CHECK(on_dev(b->grads_mem));
        const int bwd_h2d = h2d_calls, bwd_d2h = d2h_calls;
        CHECK(FAKE.memcpy_d2h(g, b->grads_mem, bytes) == GPT2C_OK && memcmp(g, a->grads_mem, bytes) == 0);
        h2d_calls = bwd_h2d, d2h_calls = bwd_d2h; /* the check's own copy does not count */
        CHECK_OK(gpt2c_model_update(a, &opt, 1e-2f, &na));
        CHECK_OK(gpt2c_model_update(b, &opt, 1e-2f, &nb));
        CHECK_MSG(h2d_calls == 0 && d2h_calls == 0, "backward + update copied %d up, %d down (want none)", h2d_calls,
                  d2h_calls);
        CHECK(na == nb);
        /* what each update leaves (a device backend without the fused update zeroes all) */
        CHECK(FAKE.memcpy_d2h(g, b->grads_mem, bytes) == GPT2C_OK && tu_grads_not_fresh(b, g) == 0);
        CHECK(tu_grads_not_fresh(a, a->grads_mem) == 0);
    }
    CHECK_OK(gpt2c_model_params_host(b, &hb));
    CHECK(memcmp(hb, a->params_mem, bytes) == 0);
    check_save_same(a, b);

    /* inference: logits come back to the host */
    CHECK_OK(gpt2c_model_forward(a, x, NULL, B, T, NULL));
    CHECK_OK(gpt2c_model_forward(b, x, NULL, B, T, NULL));
    const float *lg = gpt2c_model_logits(b);
    CHECK(lg && !on_dev(lg));
    CHECK(lg && memcmp(lg, gpt2c_model_logits(a), sizeof(float) * B * T * a->cfg.padded_vocab_size) == 0);

    /* host writes through the mirror reach the device */
    hb[a->info[GPT2C_P_LNFB].byte_offset / sizeof(float)] = 0.5f;
    CHECK_OK(gpt2c_model_params_upload(b));
    CHECK(b->params.t[GPT2C_P_LNFB][0] == 0.5f); /* fake device memory is host-readable */
    b->params.t[GPT2C_P_LNFB][0] = a->params.t[GPT2C_P_LNFB][0];

    /* back to the host: everything moves, nothing stays on the device */
    CHECK_OK(gpt2c_model_set_backend(b, "ref"));
    CHECK(nallocs == 0 && b->params_host == NULL && !on_dev(b->params_mem));
    CHECK(memcmp(b->params_mem, a->params_mem, bytes) == 0);
    CHECK(b->m_mem && memcmp(b->m_mem, a->m_mem, bytes) == 0 && memcmp(b->v_mem, a->v_mem, bytes) == 0);
    float la = 0, lb = 0;
    CHECK_OK(gpt2c_model_forward(a, x, y, B, T, &la));
    CHECK_OK(gpt2c_model_forward(b, x, y, B, T, &lb));
    CHECK(la == lb);

    /* a profile of a model on the device: the device's hooks attach, and the
     * roofs are the GPU's nominal peaks, never the CPU's (none known: unavailable) */
    CHECK_OK(gpt2c_model_use_kernels(b, &FAKE));
    gpt2c_profile_opts po = gpt2c_profile_opts_default();
    po.counters = 0;
    for (int rated = 0; rated < 2; rated++) {
        fake_matmul_flops = rated ? 5e13 : 0;
        fake_mem_bytes_per_s = rated ? 2e12 : 0;
        gpt2c_profile_session *ps = NULL;
        CHECK_OK(gpt2c_profile_session_begin(&ps, b, &po));
        if (!ps) continue;
        if (rated)
            CHECK_MSG(ps->have_peak && ps->peak_device && fabs(ps->peak.gflops - 5e4) < 1e-6 && fabs(ps->peak.mem_gbs - 2e3) < 1e-6,
                      "device peaks: have %d device %d %.1f GFLOP/s %.1f GB/s", ps->have_peak, ps->peak_device,
                      ps->peak.gflops, ps->peak.mem_gbs);
        else
            CHECK_MSG(!ps->have_peak && strstr(ps->peak_reason, "GPU's peaks are unknown"), "no device peaks: %s",
                      ps->peak_reason);
        gpt2c_profile_session_free(ps);
    }
    fake_matmul_flops = fake_mem_bytes_per_s = 0;

    /* freeing a model on the device releases all device memory */
    CHECK_OK(gpt2c_model_use_kernels(b, &FAKE));
    CHECK_OK(gpt2c_model_forward(b, x, y, B, T, &lb));
    CHECK_OK(gpt2c_model_backward(b, 1.0f));
    CHECK(nallocs > 0);
    gpt2c_model_free(b);
    CHECK_MSG(nallocs == 0, "%d device allocations leaked", nallocs);
    CHECK_MSG(host_ptr_uses == 0, "%d host pointers reached device ops or hooks", host_ptr_uses);
    gpt2c_model_free(a);
    free(g);
    return tu_finish("test_cuda_memspace");
}
