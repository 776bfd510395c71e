/* The server's pieces: requests (serve_request.c parses them), their text
 * (serve_text.c), the scheduler (serve_sched.c), the HTTP side (serve_http.c)
 * and the metrics page (serve_metrics.c).  One mutex, the server's, guards
 * the queue, every request's output and the counters. */
#ifndef GPT2C_SERVE_INTERNAL_H
#define GPT2C_SERVE_INTERNAL_H

#include <pthread.h>
#include <stdint.h>

#include "gpt2c/infer.h"
#include "gpt2c/serve.h"

enum { SRV_MAX_STOP = 4, SRV_MAX_STOP_LEN = 256 };

/* ---- text: token bytes -> valid UTF-8 -> stop strings ---------------------- */
/* Growable byte string. */
typedef struct srv_buf {
    char *p;
    size_t len, cap;
} srv_buf;
int gpt2c_srv_buf_add(srv_buf *b, const void *p, size_t n); /* 0 ok, -1 out of memory */
void gpt2c_srv_buf_free(srv_buf *b);

/* Incremental UTF-8 repair: bytes in, valid UTF-8 out, each ill-formed
 * subsequence (Unicode's "maximal subpart") replaced by U+FFFD; an incomplete
 * sequence at the end is held until more bytes come or `final`.  Feeding the
 * bytes in any split gives the same text as feeding them at once. */
typedef struct srv_utf8 {
    unsigned char pend[4];
    int npend;
} srv_utf8;
int gpt2c_srv_utf8_feed(srv_utf8 *u, const unsigned char *p, size_t n, int final, srv_buf *out);

/* The completion text of one request: repaired text, cut at the first stop
 * string; `safe` bytes of it can be sent (the rest could still be the start
 * of a stop string). */
typedef struct srv_text {
    srv_utf8 u;
    srv_buf text;
    size_t safe;
    int stopped; /* a stop string was found: text ends before it */
} srv_text;
/* Appends token bytes; returns 1 if a stop string completed, 0 if not, -1 out of memory. */
int gpt2c_srv_text_add(srv_text *t, const char *const *stop, int nstop, const void *bytes, size_t n, int final);

/* ---- a completion request ---------------------------------------------------- */
typedef struct srv_params {
    int32_t *prompt; /* token ids (malloc'd) */
    int n_prompt;
    int max_tokens;
    gpt2c_sampling sp;
    char *stop[SRV_MAX_STOP];
    int nstop;
    int stream;
    int have_seed; /* else the server picks one */
} srv_params;
void gpt2c_srv_params_free(srv_params *p);

/* Parses and checks a request body.  Returns 0, or the HTTP status (400) with
 * *err the message and *param the field at fault (static or in *errbuf). */
int gpt2c_srv_parse_completion(const char *body, size_t len, const gpt2c_tokenizer *tok, int V, int ctx,
                         srv_params *out, char *errbuf, size_t errlen, const char **param);

typedef struct srv_req srv_req;
struct srv_req {
    srv_params p;
    unsigned long long id;
    long long created; /* unix seconds */
    uint64_t t_submit; /* gpt2c_now_ns at queueing */
    /* scheduler's (no lock) */
    int slot;         /* KV-cache sequence, -1 none */
    int prefilled;    /* prompt tokens in the cache */
    int32_t last;     /* the id the next decode step feeds */
    gpt2c_sampler *smp;
    srv_req *next;    /* queue / running list */
    /* shared (server mutex) */
    srv_text out;
    int generated;    /* tokens sampled */
    int done;         /* finished: out.text final */
    const char *finish; /* "stop" | "length" */
    int cancelled;    /* the client went away */
    int refs;         /* the connection's and the scheduler's */
    pthread_cond_t cv; /* text grew or done */
};

/* ---- the server ---------------------------------------------------------------- */
struct MHD_Daemon;
struct gpt2c_server {
    gpt2c_serve_config cfg;
    gpt2c_model *m;
    const gpt2c_tokenizer *tok;
    int V, Vp, eot;
    gpt2c_infer *inf;
    float *logits; /* (max_batch, Vp) decode output */

    pthread_mutex_t mu;
    pthread_cond_t work; /* the scheduler's: a request arrived, one was cancelled, or drain */
    pthread_cond_t idle; /* drain's: a request was released */
    srv_req *queue, *queue_tail; /* waiting for a slot */
    int nqueue;
    int live;      /* HTTP requests in progress (first call to on_completed) */
    int draining;  /* new completions get 503 */
    int stop;      /* the scheduler exits once nothing is left */
    int paused;    /* gpt2c_server_pause */
    int drained;
    unsigned long long next_id;
    gpt2c_serve_stats st;

    pthread_t sched;
    int sched_started;
    struct MHD_Daemon *d;
    int port;
};

/* Scheduler thread body. */
void *gpt2c_srv_sched_main(void *arg);
/* Queues a request (refs 2). Returns 0, 1 when the server drains, 2 when the queue is full. */
int gpt2c_srv_submit(gpt2c_server *s, srv_req *r);
/* Drops one reference (mutex held); frees the request at zero. */
void gpt2c_srv_req_release_locked(gpt2c_server *s, srv_req *r);

/* Response bodies (malloc'd JSON text). */
char *gpt2c_srv_json_error(const char *msg, const char *type, const char *param);
char *gpt2c_srv_json_completion(const gpt2c_server *s, const srv_req *r, const char *text, size_t len, int final);
char *gpt2c_srv_json_models(const gpt2c_server *s);
char *gpt2c_srv_metrics_text(gpt2c_server *s);

#endif
