/* `gpt2c generate`: prompt -> tokens with the KV cache, streamed as they arrive.
 * Text in and out goes through the tokenizer (--vocab, or the shared data
 * directory); without one, --prompt-ids in and ids out. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/infer_common.h"
#include "cli/lora_arg.h"
#include "cli/precision_arg.h"
#include "cli/quant_arg.h"
#include "cli/model_arg.h"
#include "cli/run_arg.h"
#include "gpt2c/infer.h"
#include "gpt2c/tokenizer.h"

#define CMD "generate"

/* "1,2, 3" -> ids (malloc'd) */
static int parse_ids(const char *s, int32_t **ids, int *n) {
    size_t cap = 16, len = 0;
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) return cli_error(CMD, "--prompt-ids: out of memory");
    const char *p = s;
    while (*p) {
        while (*p == ' ' || *p == ',' || *p == '\n' || *p == '\t') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        long long x = strtoll(p, &end, 10);
        if (end == p || errno || x < -2147483647LL || x > 2147483647LL) {
            free(v);
            return cli_error(CMD, "--prompt-ids: expected comma-separated integers, got '%.20s'", p);
        }
        if (len == cap) {
            int32_t *w = len < (size_t)1 << 30 ? realloc(v, (cap *= 2) * sizeof *v) : NULL;
            if (!w) {
                free(v);
                return cli_error(CMD, "--prompt-ids: too many ids (out of memory after %zu)", len);
            }
            v = w;
        }
        v[len++] = (int32_t)x;
        p = end;
    }
    *ids = v;
    *n = (int)len;
    return 0;
}

static char *read_stdin(size_t *n) {
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len, stdin)) > 0) {
        len += got;
        if (len == cap) {
            char *b = cap <= SIZE_MAX / 2 ? realloc(buf, cap *= 2) : NULL;
            if (!b) free(buf);
            buf = b;
        }
    }
    *n = buf ? len : 0;
    return buf; /* NULL: out of memory */
}

typedef struct {
    const gpt2c_tokenizer *tok;
    int batch, eot;
    int32_t **out; /* batch > 1: ids per sequence, printed at the end */
    int *nout;
} stream_ctx;

static int on_token(void *user, int seq, int32_t id) {
    stream_ctx *c = user;
    if (c->batch > 1) {
        c->out[seq][c->nout[seq]++] = id;
        return 0;
    }
    if (id == c->eot) return 0; /* the loop stops this sequence; the marker is not printed */
    if (c->tok) {
        const char *p;
        size_t len;
        if (gpt2c_tokenizer_token_bytes(c->tok, id, &p, &len) == GPT2C_OK) fwrite(p, 1, len, stdout);
    } else {
        printf("%d ", id);
    }
    fflush(stdout); /* streaming: each token as it arrives */
    return 0;
}

int cmd_generate(int argc, char **argv) {
    const char *quant = NULL, *kv = NULL, *qact = NULL, *precision = "fp32", *adapter = NULL;
    const char *model = NULL, *prompt = NULL, *prompt_ids = NULL, *vocab = NULL, *backend = "cpu";
    int max_tokens = 64, batch = 1, threads = 0, top_k = 0, stats = 0, hugepages = 0;
    double temperature = 1.0, top_p = 1.0;
    long long seed = 1337;
    cli_opt opts[] = {
        {"--model", CLI_STR, &model, "checkpoint file or Hugging Face model directory, or a model name (gpt2, gpt2-medium, ...) with random weights", 0, 0},
        {"--prompt", CLI_STR, &prompt, "prompt text (default: read stdin)", 0, 0},
        {"--prompt-ids", CLI_STR, &prompt_ids, "prompt as comma-separated token ids", 0, 0},
        {"--max-tokens", CLI_INT, &max_tokens, "tokens to generate per sequence [64]", 0, 2147483647},
        {"--temperature", CLI_FLOAT, &temperature, "0 = greedy [1.0]", 0, 0},
        {"--top-k", CLI_INT, &top_k, "sample among the k most likely, 0 = off [0]", 0, 0},
        {"--top-p", CLI_FLOAT, &top_p, "nucleus sampling mass in (0, 1] [1.0]", 0, 0},
        SEED_ARG_OPT(seed, "sampling seed (sequence b uses stream b)"),
        BATCH_ARG_OPT(batch, "independent samples generated together", 4096),
        {"--vocab", CLI_STR, &vocab, "tokenizer directory [the model directory's, else $GPT2C_DATA/gpt2-tokenizer]", 0, 0},
        THREADS_ARG_OPT_STD(threads),
        BACKEND_ARG_OPT_STD(backend),
        {"--stats", CLI_FLAG, &stats, "print prefill and decode tok/s to stderr", 0, 0},
        QUANT_ARG_OPT(quant),
        KV_ARG_OPT(kv),
        QACT_ARG_OPT(qact),
        ADAPTER_ARG_OPT(adapter),
        PRECISION_ARG_OPT(precision),
        {"--hugepages", CLI_FLAG, &hugepages, "move the weights into 2 MiB pages first (slower start, faster decode)", 0, 0},
    };
    int rc = cli_parse(CMD, argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if ((rc = precision_arg_check(CMD, precision, backend))) return rc;
    if (!model) return cli_error(CMD, "--model is required (a checkpoint path or gpt2, gpt2-medium, ...)");
    if (prompt && prompt_ids) return cli_error(CMD, "--prompt and --prompt-ids: give one, not both");
    if (max_tokens < 0) return cli_error(CMD, "--max-tokens: %d is negative", max_tokens);
    gpt2c_sampling sp = {(float)temperature, top_k, (float)top_p, (uint64_t)seed};
    if (gpt2c_sampling_check(&sp) != GPT2C_OK) return cli_fail_status(CMD);

    /* the tokenizer: needed for text in; used for text out when found */
    gpt2c_tokenizer *tok = NULL;
    model_arg from_model = {.model = model}; /* a model directory may hold its tokenizer */
    const char *vdir = cli_find_vocab(vocab ? vocab : model_arg_vocab_dir(&from_model));
    if (vdir && gpt2c_tokenizer_load(vdir, &tok) != GPT2C_OK) {
        if (vocab || !prompt_ids) return cli_fail_status(CMD);
        tok = NULL; /* a default vocabulary that fails to load is not needed with --prompt-ids */
    }
    if (!tok && !prompt_ids)
        return cli_error(CMD, "no tokenizer found for text input: pass --vocab DIR (or set $GPT2C_DATA), or use --prompt-ids");

    int32_t *ids = NULL;
    int n = 0;
    if (prompt_ids) {
        if (parse_ids(prompt_ids, &ids, &n)) {
            gpt2c_tokenizer_free(tok);
            return 2;
        }
    } else {
        size_t len = 0, nids = 0;
        char *text = prompt ? NULL : read_stdin(&len);
        if (!prompt && !text) {
            gpt2c_tokenizer_free(tok);
            return cli_error(CMD, "stdin: out of memory reading the prompt");
        }
        gpt2c_status st = gpt2c_tokenizer_encode(tok, prompt ? prompt : text, prompt ? strlen(prompt) : len, 1, &ids, &nids);
        free(text);
        if (st != GPT2C_OK) {
            gpt2c_tokenizer_free(tok);
            return cli_fail_status(CMD);
        }
        if (nids > (size_t)INT32_MAX) {
            free(ids);
            gpt2c_tokenizer_free(tok);
            return cli_error(CMD, "prompt: %zu tokens is more than any context holds", nids);
        }
        n = (int)nids;
    }
    if (n == 0) {
        free(ids);
        gpt2c_tokenizer_free(tok);
        return cli_error(CMD, "prompt: empty (need at least one token)");
    }

    gpt2c_model *m = NULL;
    gpt2c_infer *s = NULL;
    gpt2c_sampler *smp = NULL;
    stream_ctx sc = {tok, batch, -1, NULL, NULL};
    if (cli_open_model(model, backend, 1337, &m) != GPT2C_OK) goto fail;
    gpt2c_model_set_threads(m, threads);
    if (quant_arg_apply(CMD, quant, model, m, 1) || kv_arg_apply(CMD, kv, m) || qact_arg_apply(CMD, qact) || precision_arg_apply(CMD, precision, m, 1) ||
        adapter_arg_apply(CMD, adapter, m)) {
        rc = 1;
        goto done;
    }
    const int V = gpt2c_model_config(m)->vocab_size, ctx = gpt2c_model_config(m)->max_seq_len;
    if (tok && !vocab && prompt_ids && gpt2c_tokenizer_vocab_size(tok) > V) {
        gpt2c_tokenizer_free(tok); /* the default vocabulary does not fit this model: ids out */
        tok = NULL;
        sc.tok = NULL;
    }
    if (tok && gpt2c_tokenizer_vocab_size(tok) > V) {
        rc = cli_error(CMD, "--vocab: the tokenizer has %d ids but the model only %d", gpt2c_tokenizer_vocab_size(tok), V);
        goto done;
    }
    if (hugepages) gpt2c_infer_hugepages(m);
    sc.eot = tok ? gpt2c_tokenizer_eot(tok) : (V == 50257 ? 50256 : -1);
    /* the cache holds prompt + new tokens (the generate call refuses what does not fit the model) */
    const long long want = (long long)n + max_tokens; /* no int overflow: max_tokens may be 2^31 - 1 */
    if (want > ctx) {
        rc = cli_error(CMD, "--max-tokens: prompt (%d tokens) + max-tokens (%d) = %lld exceeds the context of %d (at most %d "
                       "new tokens fit)", n, max_tokens, want, ctx, ctx - n > 0 ? ctx - n : 0);
        goto done;
    }
    if (gpt2c_infer_create(m, batch, want <= ctx ? (int)want : ctx, 0, &s) != GPT2C_OK) goto fail;
    if (gpt2c_sampler_create(&sp, V, batch, &smp) != GPT2C_OK) goto fail;
    if (batch > 1) {
        sc.out = calloc((size_t)batch, sizeof *sc.out);
        sc.nout = calloc((size_t)batch, sizeof *sc.nout);
        int ok = sc.out && sc.nout;
        for (int b = 0; ok && b < batch; b++) ok = (sc.out[b] = malloc(sizeof(int32_t) * ((size_t)max_tokens + 1))) != NULL;
        if (!ok) {
            rc = cli_error(CMD, "out of memory for %d output sequences", batch);
            goto done;
        }
    }
    gpt2c_gen_stats gs;
    if (gpt2c_generate(s, smp, ids, n, max_tokens, sc.eot, on_token, &sc, &gs) != GPT2C_OK) goto fail;
    if (batch == 1) {
        printf("\n");
    } else {
        for (int b = 0; b < batch; b++) {
            printf("--- sample %d ---\n", b);
            int k = sc.nout[b] && sc.out[b][sc.nout[b] - 1] == sc.eot ? sc.nout[b] - 1 : sc.nout[b];
            if (tok) {
                char *text = NULL;
                size_t len = 0;
                if (gpt2c_tokenizer_decode(tok, sc.out[b], (size_t)k, &text, &len) == GPT2C_OK) fwrite(text, 1, len, stdout);
                free(text);
            } else {
                for (int i = 0; i < k; i++) printf("%d ", sc.out[b][i]);
            }
            printf("\n");
        }
    }
    if (stats) {
        const double pf = gs.prefill_ns ? gs.prompt_tokens / (gs.prefill_ns * 1e-9) : 0;
        const double dc = gs.decode_ns ? (double)batch * gs.decode_steps / (gs.decode_ns * 1e-9) : 0;
        fprintf(stderr, "gpt2c generate: prompt %d tokens, prefill %.1f tok/s; %d tokens x %d sequences, decode %.1f tok/s\n",
                gs.prompt_tokens, pf, gs.generated, batch, dc);
    }
    rc = 0;
    goto done;
fail:
    rc = cli_fail_status(CMD);
done:
    if (sc.out)
        for (int b = 0; b < batch; b++) free(sc.out[b]); /* calloc'd: unset entries are NULL */
    free(sc.out);
    free(sc.nout);
    gpt2c_sampler_free(smp);
    gpt2c_infer_free(s);
    gpt2c_model_free(m);
    gpt2c_tokenizer_free(tok);
    free(ids);
    return rc;
}
