#include "model/acts.h"

#include <stdlib.h>

#include "gpt2c/lora.h"
#include "kernels/kernels.h"
#include "model/memspace.h"

/* Carves consecutive 64-byte-aligned pieces out of a slab, offsets in bytes
 * (first pass with base NULL only counts). */
typedef struct {
    unsigned char *base;
    size_t used; /* bytes */
} carver;

static void *carve_bytes(carver *c, size_t bytes) {
    void *p = c->base ? c->base + c->used : NULL;
    c->used += (bytes + 63) / 64 * 64;
    return p;
}
static float *carve(carver *c, size_t floats) { return carve_bytes(c, floats * sizeof(float)); }

/* Does a backward read the input of weight `id` (its weight gradient, or an
 * adapter's)?  A frozen weight without an adapter needs only its data
 * gradient, which does not read the input. */
static int input_kept(const gpt2c_model *m, int id, int site) {
    const gpt2c_lora *l = gpt2c_model_lora(m);
    return m->trainable[id] || (l && (gpt2c_lora_config(l)->targets >> site & 1));
}

static void carve_forward(carver *cv, gpt2c_acts *a, const gpt2c_model *m, size_t N, size_t S) {
    const gpt2c_config *c = &m->cfg;
    const size_t L = (size_t)c->num_layers, C = (size_t)c->channels, Vp = (size_t)c->padded_vocab_size;
    a->ln1_ls = input_kept(m, GPT2C_P_QKVW, GPT2C_LORA_C_ATTN) ? N * C : 0;
    a->ln2_ls = input_kept(m, GPT2C_P_FCW, GPT2C_LORA_C_FC) ? N * C : 0;
    a->fchg_ls = input_kept(m, GPT2C_P_FCPROJW, GPT2C_LORA_MLP_C_PROJ) ? N * 4 * C : 0;
    a->encoded = carve(cv, N * C);
    a->ln1 = carve(cv, a->ln1_ls ? L * N * C : N * C);
    a->ln1_mean = carve(cv, L * N);
    a->ln1_rstd = carve(cv, L * N);
    a->qkv = carve(cv, L * N * 3 * C);
    a->atty = carve(cv, L * N * C);
    a->att_state = carve(cv, L * S);
    a->residual2 = carve(cv, L * N * C);
    a->ln2 = carve(cv, a->ln2_ls ? L * N * C : N * C);
    a->ln2_mean = carve(cv, L * N);
    a->ln2_rstd = carve(cv, L * N);
    a->fch = carve(cv, L * N * 4 * C);
    a->fch_gelu = carve(cv, a->fchg_ls ? L * N * 4 * C : N * 4 * C);
    a->residual3 = carve(cv, L * N * C);
    a->lnf = carve(cv, N * C);
    a->lnf_mean = carve(cv, N);
    a->lnf_rstd = carve(cv, N);
    a->logits = carve(cv, N * Vp);
    a->losses = carve(cv, N);
    a->proj = carve(cv, N * C);
    a->tokens = carve_bytes(cv, N * sizeof(int32_t));
    a->targets = carve_bytes(cv, N * sizeof(int32_t));
}

gpt2c_status gpt2c_acts_plan(gpt2c_acts **out, const gpt2c_model *m, int B, int T) {
    gpt2c_acts *a = calloc(1, sizeof *a);
    if (!a) return gpt2c_fail(GPT2C_ERR_NOMEM, "activations: out of memory");
    a->mem_k = m->k;
    a->N = (size_t)B * T;
    a->state_floats = m->k->attention_state_floats(B, T, m->cfg.num_heads);
    carver cv = {NULL, 0};
    carve_forward(&cv, a, m, a->N, a->state_floats);
    a->bytes = cv.used;
    a->mem = gpt2c_mem_alloc(m->k, a->bytes, "activations");
    if (!a->mem) {
        free(a);
        return GPT2C_ERR_NOMEM;
    }
    cv.base = a->mem;
    cv.used = 0;
    carve_forward(&cv, a, m, a->N, a->state_floats);
    if (gpt2c_mem_is_device(m->k)) {
        a->losses_host = gpt2c_alloc(a->N * sizeof(float), "losses (host mirror)");
        if (!a->losses_host) {
            gpt2c_acts_free(a);
            return GPT2C_ERR_NOMEM;
        }
    } else {
        a->losses_host = a->losses;
        a->logits_host = a->logits;
    }
    if (m->lora) {
        gpt2c_status st = gpt2c_lora_prepare(m->lora, m, a->N);
        if (st != GPT2C_OK) {
            gpt2c_acts_free(a);
            return st;
        }
    }
    *out = a;
    return GPT2C_OK;
}

gpt2c_status gpt2c_acts_plan_backward(gpt2c_acts *a, const gpt2c_model *m) {
    if (a->bmem) return GPT2C_OK;
    const size_t C = (size_t)m->cfg.channels, N = a->N;
    const size_t scratch = m->k->attention_scratch_floats(m->B, m->T, m->cfg.num_heads);
    for (int pass = 0; pass < 2; pass++) {
        carver cv = {a->bmem, 0};
        a->dres = carve(&cv, N * C);
        a->dbuf = carve(&cv, N * C);
        a->dqkv = carve(&cv, N * 3 * C);
        a->d4c = carve(&cv, N * 4 * C);
        a->att_scratch = carve(&cv, scratch);
        if (pass == 0) {
            a->bbytes = cv.used;
            a->bmem = gpt2c_mem_alloc(a->mem_k, a->bbytes, "backward buffers");
            if (!a->bmem) return GPT2C_ERR_NOMEM;
        }
    }
    return GPT2C_OK;
}

void gpt2c_acts_free(gpt2c_acts *a) {
    if (!a) return;
    gpt2c_mem_free(a->mem_k, a->mem);
    gpt2c_mem_free(a->mem_k, a->bmem);
    if (gpt2c_mem_is_device(a->mem_k)) {
        gpt2c_free(a->losses_host);
        gpt2c_free(a->logits_host);
    }
    free(a);
}

void gpt2c_acts_drop(gpt2c_model *m) {
    gpt2c_acts_free(m->acts);
    m->acts = NULL;
    m->have_targets = 0;
}
