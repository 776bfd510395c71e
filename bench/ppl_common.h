/* Shared by the perplexity benchmarks (quant_act_ppl.c, qprefill_ppl.c):
 * an llm.c token shard read whole, a checkpoint loaded (and quantized to
 * the named format on load), and one position's negative log-likelihood. */
#ifndef GPT2C_BENCH_PPL_COMMON_H
#define GPT2C_BENCH_PPL_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpt2c/model.h"
#include "gpt2c/quant.h"
#include "gpt2c/quant_model.h"

/* -log softmax(logits)[target] over V logits, in double */
static double ppl_nll(const float *logits, int V, int32_t target) {
    float mx = logits[0];
    for (int i = 1; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0;
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
    return log(sum) + mx - logits[target];
}

/* the tokens of an llm.c shard (256-int header, then uint16 tokens); NULL after a message */
static uint16_t *ppl_read_shard(const char *path, int *n) {
    FILE *f = fopen(path, "rb");
    int32_t hdr[256];
    if (!f || fread(hdr, sizeof hdr, 1, f) != 1) {
        fprintf(stderr, "%s: cannot read the shard header\n", path);
        if (f) fclose(f);
        return NULL;
    }
    *n = hdr[2];
    uint16_t *tok16 = malloc(sizeof(uint16_t) * (size_t)*n);
    if (!tok16 || fread(tok16, sizeof(uint16_t), (size_t)*n, f) != (size_t)*n) {
        fprintf(stderr, "%s: truncated\n", path);
        fclose(f), free(tok16);
        return NULL;
    }
    fclose(f);
    return tok16;
}

/* the checkpoint, its weights quantized to `format` (f32: as loaded) and the fp32 copy released; NULL after a message */
static gpt2c_model *ppl_load_model(const char *prog, const char *ckpt, const char *format, gpt2c_format *fmt) {
    gpt2c_model *m = NULL;
    if (gpt2c_model_load(ckpt, &m) != GPT2C_OK || gpt2c_format_parse(format, fmt) != 0 ||
        (gpt2c_format_is_quantized(*fmt) && gpt2c_quantize_model(m, *fmt, 0, 1, NULL) != GPT2C_OK)) {
        fprintf(stderr, "%s: %s\n", prog, gpt2c_errmsg());
        return NULL;
    }
    if (gpt2c_format_is_quantized(*fmt)) gpt2c_quant_release_fp32(m);
    return m;
}

#endif
