/* What quantizing the activations to int8 (the q8 / q4 decode kernels on
 * AVX-512 VNNI) costs in perplexity: the validation tokens are fed through
 * the decode path one token per step (3 sequences at a time, within the
 * int8 kernels' 3 rows), each position's logits scored against the next
 * token, once with int8 activations and once with fp32 activations (the
 * dequantized weights exactly).  Built and run by bench/quant_act_ppl.sh.
 * Usage: quant_act_ppl CKPT FORMAT VAL.bin [SEQ]   (llm.c token shard) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpt2c/infer.h"
#include "gpt2c/model.h"
#include "gpt2c/quant.h"
#include "gpt2c/quant_model.h"

enum { ROWS = 3 };

static double nll(const float *logits, int V, int32_t target) {
    float mx = logits[0];
    for (int i = 1; i < V; i++) mx = logits[i] > mx ? logits[i] : mx;
    double sum = 0;
    for (int i = 0; i < V; i++) sum += exp((double)logits[i] - mx);
    return log(sum) + mx - logits[target];
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: quant_act_ppl CKPT q8|q4 VAL.bin [SEQ]\n");
        return 2;
    }
    const int T = argc > 4 ? atoi(argv[4]) : 256;
    FILE *f = fopen(argv[3], "rb");
    int32_t hdr[256];
    if (!f || fread(hdr, sizeof hdr, 1, f) != 1) {
        fprintf(stderr, "%s: cannot read the shard header\n", argv[3]);
        return 1;
    }
    const int n = hdr[2];
    uint16_t *tok16 = malloc(sizeof(uint16_t) * (size_t)n);
    if (!tok16 || fread(tok16, sizeof(uint16_t), (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "%s: truncated\n", argv[3]);
        return 1;
    }
    fclose(f);
    gpt2c_model *m = NULL;
    gpt2c_format fmt;
    if (gpt2c_model_load(argv[1], &m) != GPT2C_OK || gpt2c_format_parse(argv[2], &fmt) != 0 ||
        gpt2c_quantize_model(m, fmt, 0, 1, NULL) != GPT2C_OK) {
        fprintf(stderr, "quant_act_ppl: %s\n", gpt2c_errmsg());
        return 1;
    }
    gpt2c_quant_release_fp32(m);
    const int V = gpt2c_model_config(m)->vocab_size, Vp = gpt2c_model_config(m)->padded_vocab_size;
    (void)Vp;
    gpt2c_infer *s = NULL;
    if (gpt2c_infer_create(m, ROWS, T, 16, &s) != GPT2C_OK) {
        fprintf(stderr, "quant_act_ppl: %s\n", gpt2c_errmsg());
        return 1;
    }
    const int nseq = (n - 1) / T / ROWS * ROWS; /* whole groups of ROWS sequences of T + 1 tokens' worth */
    for (int mode = 0; mode < 2; mode++) {
        const int int8 = gpt2c_qmatmul_set_int8_act(mode == 0);
        if (mode == 0 && !int8) printf("no AVX-512 VNNI here: int8 activations unavailable\n");
        double total = 0;
        long count = 0;
        for (int g = 0; g < nseq; g += ROWS) {
            gpt2c_infer_reset(s, -1);
            for (int t = 0; t < T; t++) {
                int32_t ids[ROWS];
                for (int r = 0; r < ROWS; r++) ids[r] = tok16[(size_t)(g + r) * T + t];
                if (gpt2c_infer_decode(s, ids) != GPT2C_OK) {
                    fprintf(stderr, "quant_act_ppl: %s\n", gpt2c_errmsg());
                    return 1;
                }
                for (int r = 0; r < ROWS; r++)
                    total += nll(gpt2c_infer_logits(s, r), V, tok16[(size_t)(g + r) * T + t + 1]), count++;
            }
        }
        printf("%s %s activations: loss %.6f perplexity %.4f over %ld tokens (%d sequences of %d, decode path)\n",
               argv[2], mode == 0 ? (int8 ? "int8" : "fp32 (int8 unavailable)") : "fp32", total / count,
               exp(total / count), count, nseq, T);
    }
    gpt2c_infer_free(s);
    gpt2c_model_free(m);
    free(tok16);
    return 0;
}
