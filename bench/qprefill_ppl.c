/* What the bf16 prefill of quantized weights (gpt2c_qmatmul_bf16_prefill:
 * weights and activations rounded to bf16 in the prefill GEMMs) costs in
 * perplexity: each validation sequence of SEQ + 1 tokens is prefilled in one
 * pass through the inference path (gpt2c_infer_prefill with every position's
 * logits), each position scored against the next token, with
 *   f32 prefill, f32 KV cache   (exactly the dequantized weights: eval's loss up to summation order)
 *   bf16 prefill, f32 KV cache  (the GEMMs' rounding alone)
 *   bf16 prefill, bf16 KV cache (the default of quantized weights where AVX512_BF16 runs)
 * Built and run by bench/qprefill_ppl.sh.
 * Usage: qprefill_ppl CKPT f32|q8|q4|nf4 VAL.bin [SEQ [MAXSEQS]]   (llm.c token shard) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpt2c/infer.h"
#include "gpt2c/model.h"
#include "gpt2c/quant.h"
#include "gpt2c/quant_model.h"
#include "ppl_common.h"

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: qprefill_ppl CKPT f32|q8|q4|nf4 VAL.bin [SEQ [MAXSEQS]]\n");
        return 2;
    }
    const int T = argc > 4 ? atoi(argv[4]) : 256;
    int n = 0;
    uint16_t *tok16 = ppl_read_shard(argv[3], &n);
    gpt2c_format fmt;
    gpt2c_model *m = tok16 ? ppl_load_model("qprefill_ppl", argv[1], argv[2], &fmt) : NULL;
    if (!m) return 1;
    const int V = gpt2c_model_config(m)->vocab_size, Vp = gpt2c_model_config(m)->padded_vocab_size;
    int nseq = (n - 1) / T; /* sequences of T tokens, each scored against the next T */
    if (argc > 5 && atoi(argv[5]) > 0 && atoi(argv[5]) < nseq) nseq = atoi(argv[5]);
    float *logits = malloc(sizeof(float) * (size_t)T * Vp);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)T);
    if (!logits || !ids) return 1;
    static const struct { int bf16, kvbf16; const char *name; } modes[] = {
        {0, 0, "f32 prefill, f32 KV cache"}, {1, 0, "bf16 prefill, f32 KV cache"}, {1, 1, "bf16 prefill, bf16 KV cache"}};
    for (int mi = 0; mi < 3; mi++) {
        if (!gpt2c_format_is_quantized(fmt) && mi > 0) break; /* fp32 weights: the exact path only */
        if (gpt2c_qmatmul_set_bf16_prefill(modes[mi].bf16) != modes[mi].bf16) {
            printf("%s %s: unavailable (no AVX512_BF16 here, or not the AVX-512 path)\n", argv[2], modes[mi].name);
            fflush(stdout);
            continue;
        }
        gpt2c_model_set_kv_cache(m, modes[mi].kvbf16 ? GPT2C_KV_BF16 : GPT2C_KV_F32);
        gpt2c_infer *s = NULL;
        if (gpt2c_infer_create(m, 1, T, T, &s) != GPT2C_OK) {
            fprintf(stderr, "qprefill_ppl: %s\n", gpt2c_errmsg());
            return 1;
        }
        double total = 0;
        long count = 0;
        for (int q = 0; q < nseq; q++) {
            for (int t = 0; t < T; t++) ids[t] = tok16[(size_t)q * T + t];
            gpt2c_infer_reset(s, 0);
            if (gpt2c_infer_prefill(s, 0, ids, T, logits) != GPT2C_OK) {
                fprintf(stderr, "qprefill_ppl: %s\n", gpt2c_errmsg());
                return 1;
            }
            for (int t = 0; t < T; t++) total += ppl_nll(logits + (size_t)t * Vp, V, tok16[(size_t)q * T + t + 1]), count++;
        }
        printf("%s %s: loss %.6f perplexity %.4f over %ld tokens (%d sequences of %d, prefill path)\n", argv[2],
               modes[mi].name, total / count, exp(total / count), count, nseq, T);
        fflush(stdout);
        gpt2c_infer_free(s);
    }
    gpt2c_model_free(m);
    free(tok16), free(logits), free(ids);
    return 0;
}
