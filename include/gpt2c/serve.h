/* An HTTP completion server (OpenAI's /v1/completions schema) on libmicrohttpd.
 *
 *   gpt2c_serve_config cfg = gpt2c_serve_config_default();   // 127.0.0.1:8080
 *   gpt2c_server *srv;  gpt2c_server_start(model, tokenizer, &cfg, &srv);
 *   ... gpt2c_server_port(srv) ...                            // the bound port (cfg.port 0: any free one)
 *   gpt2c_server_free(srv);                                   // drains: in-flight requests finish first
 *
 * One scheduler thread owns the model and a KV cache of `slots` sequences:
 * each turn it runs at most one prefill chunk of one waiting prompt, then one
 * decode step for up to `max_batch` running requests (continuous batching:
 * requests join and leave between steps).  HTTP connections each get a thread
 * from libmicrohttpd; they tokenize, queue, and wait for text.
 *
 * Built only with libmicrohttpd and jansson (GPT2C_HAVE_SERVE). */
#ifndef GPT2C_SERVE_H
#define GPT2C_SERVE_H

#include <stddef.h>

#include "gpt2c/model.h"
#include "gpt2c/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpt2c_serve_config {
    const char *host;       /* numeric IPv4 or IPv6 address to listen on ["127.0.0.1"] */
    int port;               /* 0: a free port, see gpt2c_server_port [8080] */
    int slots;              /* KV-cache sequences: requests generating at once [max_batch] */
    int max_batch;          /* most sequences in one decode step [8] */
    int ctx;                /* tokens per slot, prompt + completion; 0: the model's context [0] */
    int prefill_chunk;      /* prompt tokens per prefill pass between decode steps [64] */
    int threads;            /* OpenMP threads of the scheduler; 0: all cores [0] */
    int max_queue;          /* requests waiting for a slot; more get HTTP 503 [256] */
    int max_connections;    /* concurrent HTTP connections [512] */
    size_t max_body;        /* request body bytes; more get HTTP 413 [1 MiB] */
    const char *model_name; /* "model" in responses and /v1/models ["gpt2c"] */
} gpt2c_serve_config;

gpt2c_serve_config gpt2c_serve_config_default(void);

typedef struct gpt2c_server gpt2c_server;

/* Plans the cache and starts the scheduler and the HTTP daemon.  The model and
 * the tokenizer must outlive the server.  Fails naming the option (--port in
 * use, --slots too large for memory, ...). */
gpt2c_status gpt2c_server_start(gpt2c_model *m, const gpt2c_tokenizer *tok, const gpt2c_serve_config *cfg,
                                gpt2c_server **out);
/* The port the server listens on. */
int gpt2c_server_port(const gpt2c_server *s);
/* Stops listening (new connections are refused, new requests on open ones get
 * 503), lets every queued and running request finish and be delivered, then
 * stops the threads.  Idempotent. */
void gpt2c_server_drain(gpt2c_server *s);
/* Holds the scheduler between steps (paused != 0) or lets it go on: requests
 * still queue and take free slots, and requests whose client left are still
 * dropped.  For maintenance and for tests that need requests in flight;
 * gpt2c_server_drain lets it go on. */
void gpt2c_server_pause(gpt2c_server *s, int paused);
/* Drains, then frees everything. */
void gpt2c_server_free(gpt2c_server *s);

/* Counters (also at GET /metrics). */
typedef struct gpt2c_serve_stats {
    unsigned long long requests;          /* HTTP requests answered, any route and status */
    unsigned long long completions;       /* completions finished (delivered or not) */
    unsigned long long rejected;          /* 4xx/5xx answers */
    unsigned long long cancelled;         /* completions whose client went away first */
    unsigned long long prompt_tokens;     /* prompt tokens prefilled */
    unsigned long long generated_tokens;  /* tokens sampled */
    unsigned long long decode_steps;      /* decode passes (each for up to max_batch sequences) */
    int queue_depth;                      /* waiting for a slot now */
    int active;                           /* holding a slot now */
    double prefill_s, decode_s;           /* scheduler time in prefill / decode passes (with sampling) */
    double ttft_s;                        /* sum over completions of queueing + prefill until the first token */
    unsigned long long ttft_count;
} gpt2c_serve_stats;
void gpt2c_server_stats(gpt2c_server *s, gpt2c_serve_stats *out);

#ifdef __cplusplus
}
#endif
#endif
