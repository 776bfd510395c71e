/* gpt2c eval: mean loss and perplexity of a model on token shards. */
#include <math.h>
#include <stdio.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/model_arg.h"
#include "cli/lora_arg.h"
#include "cli/precision_arg.h"
#include "cli/quant_arg.h"
#include "cli/run_arg.h"
#include "gpt2c/precision.h"
#include "gpt2c/quant_model.h"
#include "gpt2c/train.h"

int cmd_eval(int argc, char **argv) {
    model_arg ma = {0};
    const char *data = NULL, *backend = "cpu", *quant = NULL, *precision = "fp32", *adapter = NULL;
    int B = 4, T = 64, batches = 0, threads = 0;
    cli_opt opts[] = {
        MODEL_ARG_OPTS(ma),
        {"--data", CLI_STR, &data, "token shards: a file or a glob", 0, 0},
        BATCH_ARG_OPT(B, "batch size", CLI_BATCH_MAX),
        SEQ_ARG_OPT(T, "sequence length"),
        {"--batches", CLI_INT, &batches, "batches to evaluate (default: one pass over the data)", 0, 1 << 30},
        THREADS_ARG_OPT_STD(threads),
        BACKEND_ARG_OPT_STD(backend),
        QUANT_ARG_OPT(quant),
        ADAPTER_ARG_OPT(adapter),
        PRECISION_ARG_OPT(precision),
    };
    int rc = cli_parse("eval", argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if ((rc = precision_arg_check("eval", precision, backend))) return rc;
    if (!data) return cli_error("eval", "--data is required");
    if (!ma.model) return cli_error("eval", "--model is required (a checkpoint path or a model name)");
    gpt2c_model *m;
    int loaded;
    if ((rc = model_arg_make("eval", &ma, 1337, &m, &loaded))) return rc;
    gpt2c_model_set_threads(m, threads);
    if ((rc = quant_arg_apply("eval", quant, ma.model, m, 0)) || (rc = adapter_arg_apply("eval", adapter, m))) {
        gpt2c_model_free(m);
        return rc;
    }
    /* a quantized model's loss is that of its dequantized weights */
    const char *qfmt = gpt2c_model_qweights(m) ? gpt2c_format_get(gpt2c_model_qweights(m)->fmt)->name : NULL;
    gpt2c_quant_dequantize_params(m);
    gpt2c_dataloader dl = {0};
    float loss = 0;
    int done = 0;
    rc = 1;
    if (gpt2c_model_set_backend(m, backend) != GPT2C_OK) {
        gpt2c_model_free(m);
        return cli_fail_status("eval");
    }
    if (precision_arg_apply("eval", precision, m, 0)) {
        gpt2c_model_free(m);
        return 1;
    }
    if (gpt2c_model_prepare(m, B, T) == GPT2C_OK &&
        gpt2c_dataloader_open(&dl, data, B, T, 0, 0, gpt2c_model_config(m)->vocab_size) == GPT2C_OK &&
        gpt2c_evaluate(m, &dl, batches, &loss, &done) == GPT2C_OK) {
        printf("loss %.6f  perplexity %.4f  (%d batches of %dx%d = %lld tokens)%s%s%s%s\n", loss, exp(loss), done, B, T,
               (long long)done * B * T, qfmt ? "  [" : "", qfmt ? qfmt : "", qfmt ? " weights, dequantized]" : "",
               gpt2c_model_precision(m) == GPT2C_FMT_BF16 ? "  [bf16 precision]" : "");
        rc = 0;
    } else {
        cli_fail_status("eval");
    }
    gpt2c_dataloader_close(&dl);
    gpt2c_model_free(m);
    return rc;
}
