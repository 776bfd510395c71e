/* `gpt2c serve`: an HTTP completion server (OpenAI's /v1/completions) with
 * continuous batching; see docs/SERVE.md.  Runs until SIGTERM or SIGINT, then
 * drains: the requests in flight finish, new ones are refused. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/infer_common.h"
#include "cli/lora_arg.h"
#include "cli/precision_arg.h"
#include "cli/quant_arg.h"
#include "cli/run_arg.h"
#include "gpt2c/infer.h"
#include "gpt2c/tokenizer.h"
#ifdef GPT2C_HAVE_SERVE
#include "gpt2c/serve.h"
#endif

#define CMD "serve"

int cmd_serve(int argc, char **argv) {
    const char *model = NULL, *vocab = NULL, *host = "127.0.0.1", *backend = "cpu", *name = NULL;
    const char *quant = NULL, *kv = NULL, *qact = NULL, *precision = "fp32", *adapter = NULL;
    int port = 8080, threads = 0, max_batch = 8, slots = 0, ctx = 0, chunk = 64, max_queue = 256, hugepages = 0;
    long long max_body = 1 << 20;
    cli_opt opts[] = {
        {"--model", CLI_STR, &model, "checkpoint path, or a model name (gpt2, ...) with random weights", 0, 0},
        {"--vocab", CLI_STR, &vocab, "tokenizer directory [$GPT2C_DATA/gpt2-tokenizer]", 0, 0},
        {"--host", CLI_STR, &host, "numeric address to listen on [127.0.0.1]", 0, 0},
        {"--port", CLI_INT, &port, "TCP port, 0 = any free one (printed) [8080]", 0, 65535},
        THREADS_ARG_OPT_STD(threads),
        {"--max-batch", CLI_INT, &max_batch, "most sequences in one decode step [8]", 1, 1024},
        {"--ctx-slots", CLI_INT, &slots, "KV-cache slots = requests generating at once [max-batch]", 0, 4096},
        {"--ctx", CLI_INT, &ctx, "tokens per slot (prompt + completion), 0 = the model's [0]", 0, 1 << 20},
        {"--prefill-chunk", CLI_INT, &chunk, "prompt tokens per prefill pass between decode steps [64]", 1, 1 << 20},
        {"--max-queue", CLI_INT, &max_queue, "requests waiting for a slot before 503 [256]", 0, 1 << 20},
        {"--max-body", CLI_LONG, &max_body, "request body bytes before 413 [1048576]", 1, 1LL << 30},
        {"--name", CLI_STR, &name, "model id in responses and /v1/models [the --model argument]", 0, 0},
        BACKEND_ARG_OPT_STD(backend),
        {"--hugepages", CLI_FLAG, &hugepages, "move the weights into 2 MiB pages first (slower start, faster decode)", 0, 0},
        QUANT_ARG_OPT(quant),
        KV_ARG_OPT(kv),
        QACT_ARG_OPT(qact),
        PRECISION_ARG_OPT(precision),
        ADAPTER_ARG_OPT(adapter),
    };
    int rc = cli_parse(CMD, argc, argv, opts, CLI_NOPTS(opts), NULL);
    if (rc) return rc;
    if ((rc = precision_arg_check(CMD, precision, backend))) return rc;
#ifndef GPT2C_HAVE_SERVE
    (void)model, (void)vocab, (void)host, (void)backend, (void)name, (void)port, (void)threads, (void)max_batch;
    (void)slots, (void)ctx, (void)chunk, (void)max_queue, (void)hugepages, (void)max_body, (void)quant, (void)adapter;
    return cli_error(CMD, "this build has no HTTP support (built without libmicrohttpd or jansson: install "
                          "libmicrohttpd-dev and libjansson-dev, then rebuild)");
#else
    if (!model) return cli_error(CMD, "--model is required (a checkpoint path or gpt2, gpt2-medium, ...)");
    const char *vdir = cli_find_vocab(vocab);
    if (!vdir) return cli_error(CMD, "no tokenizer found: pass --vocab DIR (or set $GPT2C_DATA)");
    gpt2c_tokenizer *tok = NULL;
    if (gpt2c_tokenizer_load(vdir, &tok) != GPT2C_OK) return cli_fail_status(CMD);
    gpt2c_model *m = NULL;
    gpt2c_server *srv = NULL;
    if (cli_open_model(model, backend, 1337, &m) != GPT2C_OK) {
        gpt2c_tokenizer_free(tok);
        return cli_fail_status(CMD);
    }
    if (quant_arg_apply(CMD, quant, model, m, 1) || kv_arg_apply(CMD, kv, m) || qact_arg_apply(CMD, qact) || precision_arg_apply(CMD, precision, m, 1) ||
        adapter_arg_apply(CMD, adapter, m)) {
        gpt2c_model_free(m);
        gpt2c_tokenizer_free(tok);
        return 1;
    }
    if (hugepages) gpt2c_infer_hugepages(m);

    /* SIGTERM / SIGINT are taken by sigwait below: block them before any thread starts */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    gpt2c_serve_config cfg = gpt2c_serve_config_default();
    cfg.host = host;
    cfg.port = port;
    cfg.threads = threads;
    cfg.max_batch = max_batch;
    cfg.slots = slots;
    cfg.ctx = ctx;
    cfg.prefill_chunk = chunk;
    cfg.max_queue = max_queue;
    cfg.max_body = (size_t)max_body;
    cfg.model_name = name ? name : model;
    if (gpt2c_server_start(m, tok, &cfg, &srv) != GPT2C_OK) {
        rc = cli_fail_status(CMD);
        goto done;
    }
    printf("gpt2c serve: listening on http://%s:%d (model %s, %d slots; SIGTERM or Ctrl-C drains and exits)\n",
           strchr(host, ':') ? "[::]" : host, gpt2c_server_port(srv), cfg.model_name,
           cfg.slots > 0 ? cfg.slots : max_batch);
    fflush(stdout);
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "gpt2c serve: %s: draining\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    gpt2c_serve_stats st;
    gpt2c_server_drain(srv);
    gpt2c_server_stats(srv, &st);
    fprintf(stderr, "gpt2c serve: stopped after %llu requests, %llu completions, %llu tokens generated\n", st.requests,
            st.completions, st.generated_tokens);
    rc = 0;
done:
    gpt2c_server_free(srv);
    gpt2c_model_free(m);
    gpt2c_tokenizer_free(tok);
    return rc;
#endif
}
