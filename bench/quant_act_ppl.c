/* What quantizing the activations to int8 (the q8 / q4 decode kernels on
 * AVX-512 VNNI) and rounding the KV cache to bf16 cost in perplexity: the
 * validation tokens are fed through the decode path one token per step (3
 * sequences at a time, within the int8 kernels' 3 rows), each position's
 * logits scored against the next token, with {int8, fp32} activations x
 * {fp32, bf16} KV cache (fp32 + fp32: the dequantized weights exactly;
 * int8 + bf16: the default decode of q8 / q4).  Built and run by
 * bench/quant_act_ppl.sh.
 * Usage: quant_act_ppl CKPT FORMAT VAL.bin [SEQ [MAXSEQS]]   (llm.c token shard; MAXSEQS: sequences scored, default all) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpt2c/infer.h"
#include "gpt2c/model.h"
#include "gpt2c/quant.h"
#include "gpt2c/quant_model.h"
#include "ppl_common.h"

enum { ROWS = 3 };

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: quant_act_ppl CKPT f32|q8|q4|nf4 VAL.bin [SEQ]\n");
        return 2;
    }
    const int T = argc > 4 ? atoi(argv[4]) : 256;
    int n = 0;
    uint16_t *tok16 = ppl_read_shard(argv[3], &n);
    gpt2c_format fmt;
    gpt2c_model *m = tok16 ? ppl_load_model("quant_act_ppl", argv[1], argv[2], &fmt) : NULL;
    if (!m) return 1;
    const int V = gpt2c_model_config(m)->vocab_size, Vp = gpt2c_model_config(m)->padded_vocab_size;
    (void)Vp;
    int nseq = (n - 1) / T / ROWS * ROWS; /* whole groups of ROWS sequences of T + 1 tokens' worth */
    if (argc > 5 && atoi(argv[5]) > 0 && atoi(argv[5]) / ROWS * ROWS < nseq) nseq = atoi(argv[5]) / ROWS * ROWS;
    for (int mode = 0; mode < 4; mode++) {
        const int want8 = mode % 2 == 0, kvbf16 = mode >= 2;
        const int int8 = gpt2c_qmatmul_set_int8_act(want8) && gpt2c_format_is_quantized(fmt);
        if (want8 && !int8) {
            printf("%s int8 activations: unavailable (no AVX-512 VNNI here, or fp32 weights)\n", argv[2]);
            fflush(stdout);
            continue;
        }
        gpt2c_model_set_kv_cache(m, kvbf16 ? GPT2C_KV_BF16 : GPT2C_KV_F32);
        gpt2c_infer *s = NULL;
        if (gpt2c_infer_create(m, ROWS, T, 16, &s) != GPT2C_OK) {
            fprintf(stderr, "quant_act_ppl: %s\n", gpt2c_errmsg());
            return 1;
        }
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
                    total += ppl_nll(gpt2c_infer_logits(s, r), V, tok16[(size_t)(g + r) * T + t + 1]), count++;
            }
        }
        printf("%s %s activations, %s KV cache: loss %.6f perplexity %.4f over %ld tokens (%d sequences of %d, decode path)\n",
               argv[2], int8 ? "int8" : "fp32", kvbf16 ? "bf16" : "fp32", total / count, exp(total / count), count, nseq, T);
        fflush(stdout);
        gpt2c_infer_free(s);
    }
    gpt2c_model_free(m);
    free(tok16);
    return 0;
}
