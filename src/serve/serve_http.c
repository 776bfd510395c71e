/* The HTTP side on libmicrohttpd: a thread per connection (MHD's), routes,
 * request bodies with a size limit, JSON errors, completions answered whole
 * or as server-sent events; and the server's start and drain. */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "gpt2c/core.h"
#include "gpt2c/tokenizer.h"
#include "serve/serve_internal.h"

/* One HTTP request in progress (MHD's per-request pointer). */
typedef struct conn_ctx {
    gpt2c_server *s;
    struct MHD_Connection *c;
    srv_buf body;
    int too_big;
    srv_req *r;       /* a completion: one reference held */
    size_t sent;      /* stream: text bytes sent */
    int stage;        /* stream: 0 text, 1 finish event and [DONE] sent */
    srv_buf ev;       /* stream: the event being sent */
    size_t ev_off;
} conn_ctx;

gpt2c_serve_config gpt2c_serve_config_default(void) {
    gpt2c_serve_config c = {0};
    c.host = "127.0.0.1";
    c.port = 8080;
    c.max_batch = 8;
    c.prefill_chunk = 64;
    c.max_queue = 256;
    c.max_connections = 512;
    c.max_body = (size_t)1 << 20;
    c.model_name = "gpt2c";
    return c;
}

/* Is the client still there?  (A closed socket reads as end-of-file.) */
static int client_alive(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 1;
    struct pollfd pfd = {.fd = ci->connect_fd, .events = POLLIN};
    if (poll(&pfd, 1, 0) <= 0) return 1;
    if (pfd.revents & (POLLERR | POLLHUP | POLLNVAL)) return 0;
    char b;
    const ssize_t n = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return !(n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR));
}

static enum MHD_Result reply(gpt2c_server *s, struct MHD_Connection *c, unsigned status, const char *type, char *body) {
    if (!body) { /* out of memory building the answer */
        status = MHD_HTTP_INTERNAL_SERVER_ERROR;
        body = strdup("{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}");
        if (!body) return MHD_NO;
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    const enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    pthread_mutex_lock(&s->mu);
    s->st.requests++;
    if (status >= 400) s->st.rejected++;
    pthread_mutex_unlock(&s->mu);
    return ret;
}

static enum MHD_Result reply_error(gpt2c_server *s, struct MHD_Connection *c, unsigned status, const char *msg,
                                   const char *param) {
    const char *type = status == 400 || status == 413 ? "invalid_request_error"
                       : status == 404 || status == 405 ? "not_found_error"
                                                        : "server_error";
    return reply(s, c, status, "application/json", gpt2c_srv_json_error(msg, type, param));
}

/* stream: the next server-sent event into x->ev (mutex held); 0 none yet, 1 one, -1 the end */
static int next_event_locked(conn_ctx *x) {
    srv_req *r = x->r;
    const char *tail = "";
    char *json = NULL;
    if (r->out.safe > x->sent) {
        size_t n = r->out.safe - x->sent;
        if (n > 4096) { /* events of bounded size, cut between characters */
            n = 4096;
            while (n > 0 && ((unsigned char)r->out.text.p[x->sent + n] & 0xC0) == 0x80) n--;
        }
        json = gpt2c_srv_json_completion(x->s, r, r->out.text.p + x->sent, n, 0);
        x->sent += n;
    } else if (r->done && x->stage == 0) {
        json = gpt2c_srv_json_completion(x->s, r, "", 0, 1);
        tail = "data: [DONE]\n\n";
        x->stage = 1;
    } else {
        return r->done ? -1 : 0;
    }
    x->ev.len = 0;
    x->ev_off = 0;
    int bad = !json || gpt2c_srv_buf_add(&x->ev, "data: ", 6) || gpt2c_srv_buf_add(&x->ev, json, strlen(json)) ||
              gpt2c_srv_buf_add(&x->ev, "\n\n", 2) || gpt2c_srv_buf_add(&x->ev, tail, strlen(tail));
    free(json);
    return bad ? -1 : 1;
}

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    conn_ctx *x = cls;
    gpt2c_server *s = x->s;
    if (x->ev_off >= x->ev.len) {
        pthread_mutex_lock(&s->mu);
        int got;
        while ((got = next_event_locked(x)) == 0) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
            pthread_cond_timedwait(&x->r->cv, &s->mu, &ts);
            if (!x->r->done && !client_alive(x->c)) {
                got = -2;
                break;
            }
        }
        pthread_mutex_unlock(&s->mu);
        if (got == -1) return MHD_CONTENT_READER_END_OF_STREAM;
        if (got == -2) return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    size_t n = x->ev.len - x->ev_off;
    if (n > max) n = max;
    memcpy(buf, x->ev.p + x->ev_off, n);
    x->ev_off += n;
    return (ssize_t)n;
}

static enum MHD_Result completion(gpt2c_server *s, struct MHD_Connection *c, conn_ctx *x) {
    if (x->too_big) {
        char msg[128];
        snprintf(msg, sizeof msg, "request body: larger than the limit of %zu bytes", s->cfg.max_body);
        return reply_error(s, c, 413, msg, "body");
    }
    srv_req *r = calloc(1, sizeof *r);
    if (!r) return reply(s, c, 500, "application/json", NULL);
    char err[512];
    const char *param = NULL;
    const int rc = gpt2c_srv_parse_completion(x->body.p ? x->body.p : "", x->body.len, s->tok, s->V, s->cfg.ctx, &r->p, err,
                                        sizeof err, &param);
    if (rc) {
        free(r);
        return reply_error(s, c, (unsigned)rc, err, param);
    }
    pthread_cond_init(&r->cv, NULL);
    r->created = (long long)time(NULL);
    const int busy = gpt2c_srv_submit(s, r);
    if (busy) {
        gpt2c_srv_params_free(&r->p);
        pthread_cond_destroy(&r->cv);
        free(r);
        return reply_error(s, c, MHD_HTTP_SERVICE_UNAVAILABLE,
                           busy == 1 ? "server: shutting down" : "server: too many requests waiting, retry later", NULL);
    }
    x->r = r; /* the connection's reference, dropped when the request completes */
    if (r->p.stream) {
        struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, x, NULL);
        if (!resp) return MHD_NO;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        const enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);
        pthread_mutex_lock(&s->mu);
        s->st.requests++;
        pthread_mutex_unlock(&s->mu);
        return ret;
    }
    /* whole: wait here (this connection's own thread), watching for the client leaving */
    pthread_mutex_lock(&s->mu);
    while (!r->done) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&r->cv, &s->mu, &ts);
        if (!r->done && !client_alive(c)) {
            pthread_mutex_unlock(&s->mu);
            return MHD_NO; /* closes the connection; on_completed cancels */
        }
    }
    char *body = gpt2c_srv_json_completion(s, r, r->out.text.p ? r->out.text.p : "", r->out.text.len, 1);
    pthread_mutex_unlock(&s->mu);
    return reply(s, c, MHD_HTTP_OK, "application/json", body);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    gpt2c_server *s = cls;
    conn_ctx *x = *con_cls;
    const int is_post = strcmp(method, MHD_HTTP_METHOD_POST) == 0, is_get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    const int is_completion = strcmp(url, "/v1/completions") == 0;
    if (!x) {
        x = calloc(1, sizeof *x);
        if (!x) return MHD_NO;
        x->s = s;
        x->c = c;
        *con_cls = x;
        pthread_mutex_lock(&s->mu);
        s->live++;
        pthread_mutex_unlock(&s->mu);
        if (is_post && is_completion) { /* refuse an oversized body before reading it */
            const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
            if (cl && strtoull(cl, NULL, 10) > s->cfg.max_body) {
                x->too_big = 1;
                return completion(s, c, x);
            }
        }
        return MHD_YES;
    }
    if (*upload_size) {
        if (!x->too_big && (!is_post || x->body.len + *upload_size > s->cfg.max_body))
            x->too_big = 1;
        else if (!x->too_big && gpt2c_srv_buf_add(&x->body, upload, *upload_size))
            x->too_big = 1;
        *upload_size = 0;
        return MHD_YES;
    }
    if (is_completion) {
        if (!is_post) return reply_error(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "/v1/completions: use POST", NULL);
        return completion(s, c, x);
    }
    const int health = strcmp(url, "/health") == 0, models = strcmp(url, "/v1/models") == 0,
              metrics = strcmp(url, "/metrics") == 0;
    if (!health && !models && !metrics) {
        char msg[256];
        snprintf(msg, sizeof msg, "no route %.100s (routes: POST /v1/completions, GET /health /v1/models /metrics)", url);
        return reply_error(s, c, MHD_HTTP_NOT_FOUND, msg, NULL);
    }
    if (!is_get) return reply_error(s, c, MHD_HTTP_METHOD_NOT_ALLOWED, "use GET", NULL);
    if (models) return reply(s, c, MHD_HTTP_OK, "application/json", gpt2c_srv_json_models(s));
    if (metrics) return reply(s, c, MHD_HTTP_OK, "text/plain; version=0.0.4", gpt2c_srv_metrics_text(s));
    pthread_mutex_lock(&s->mu);
    const int draining = s->draining;
    char *body = malloc(160);
    if (body)
        snprintf(body, 160, "{\"status\":\"%s\",\"slots\":%d,\"active\":%d,\"queue\":%d}", draining ? "draining" : "ok",
                 s->cfg.slots, s->st.active, s->st.queue_depth);
    pthread_mutex_unlock(&s->mu);
    return reply(s, c, draining ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK, "application/json", body);
}

/* A request is over (answered, failed, or the client left): drop its completion. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)c;
    (void)toe;
    gpt2c_server *s = cls;
    conn_ctx *x = *con_cls;
    if (!x) return;
    *con_cls = NULL;
    pthread_mutex_lock(&s->mu);
    if (x->r) {
        srv_req *r = x->r;
        if (!r->done) {
            r->cancelled = 1;
            if (r->slot < 0) { /* still queued: take it out */
                srv_req **pp = &s->queue, *prev = NULL;
                while (*pp && *pp != r) prev = *pp, pp = &(*pp)->next;
                if (*pp) {
                    *pp = r->next;
                    if (s->queue_tail == r) s->queue_tail = prev;
                    s->nqueue--;
                    s->st.queue_depth = s->nqueue;
                    s->st.cancelled++;
                    gpt2c_srv_req_release_locked(s, r); /* the scheduler's reference */
                }
            }
            pthread_cond_signal(&s->work);
        }
        gpt2c_srv_req_release_locked(s, r);
    }
    s->live--;
    pthread_cond_broadcast(&s->idle);
    pthread_mutex_unlock(&s->mu);
    gpt2c_srv_buf_free(&x->body);
    gpt2c_srv_buf_free(&x->ev);
    free(x);
}

static void no_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    (void)fmt;
    (void)ap;
}

gpt2c_status gpt2c_server_start(gpt2c_model *m, const gpt2c_tokenizer *tok, const gpt2c_serve_config *cfg,
                                gpt2c_server **out) {
    *out = NULL;
    gpt2c_serve_config c = *cfg;
    const int model_ctx = gpt2c_model_config(m)->max_seq_len;
    if (!tok) return gpt2c_fail(GPT2C_ERR_ARG, "tokenizer vocabulary: the server needs one");
    if (gpt2c_tokenizer_vocab_size(tok) > gpt2c_model_config(m)->vocab_size)
        return gpt2c_fail(GPT2C_ERR_ARG, "tokenizer vocabulary: %d ids but the model only %d",
                          gpt2c_tokenizer_vocab_size(tok), gpt2c_model_config(m)->vocab_size);
    if (c.max_batch < 1 || c.max_batch > 1024) return gpt2c_fail(GPT2C_ERR_ARG, "max batch: %d (want 1..1024)", c.max_batch);
    if (c.slots <= 0) c.slots = c.max_batch;
    if (c.slots > 4096) return gpt2c_fail(GPT2C_ERR_ARG, "context slots: %d (want 1..4096)", c.slots);
    if (c.max_batch > c.slots) c.max_batch = c.slots;
    if (c.ctx <= 0) c.ctx = model_ctx;
    if (c.ctx > model_ctx) return gpt2c_fail(GPT2C_ERR_ARG, "context: %d is longer than the model's context of %d", c.ctx, model_ctx);
    if (c.prefill_chunk <= 0 || c.prefill_chunk > c.ctx) c.prefill_chunk = c.ctx < 64 ? c.ctx : 64;
    if (c.max_queue < 0) c.max_queue = 0;
    if (c.max_connections < 1) c.max_connections = 1;
    if (!c.model_name) c.model_name = "gpt2c";
    if (c.port < 0 || c.port > 65535) return gpt2c_fail(GPT2C_ERR_ARG, "port: %d is outside [0, 65535]", c.port);
    struct sockaddr_in a4 = {0};
    struct sockaddr_in6 a6 = {0};
    const char *host = c.host && strcmp(c.host, "localhost") != 0 ? c.host : "127.0.0.1";
    int v6 = 0;
    if (inet_pton(AF_INET, host, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)c.port);
    } else if (inet_pton(AF_INET6, host, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)c.port);
        v6 = 1;
    } else {
        return gpt2c_fail(GPT2C_ERR_ARG, "host: '%s' is not a numeric IPv4 or IPv6 address", c.host);
    }

    gpt2c_server *s = calloc(1, sizeof *s);
    if (!s) return gpt2c_fail(GPT2C_ERR_NOMEM, "server: out of memory");
    s->cfg = c;
    s->m = m;
    s->tok = tok;
    s->V = gpt2c_model_config(m)->vocab_size;
    s->Vp = gpt2c_model_config(m)->padded_vocab_size;
    s->eot = gpt2c_tokenizer_eot(tok);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->work, NULL);
    pthread_cond_init(&s->idle, NULL);
    gpt2c_status st = gpt2c_infer_create(m, c.slots, c.ctx, c.prefill_chunk, &s->inf);
    if (st != GPT2C_OK) goto fail;
    s->logits = gpt2c_alloc(sizeof(float) * (size_t)c.max_batch * (size_t)s->Vp, "server decode logits");
    if (!s->logits) {
        st = GPT2C_ERR_NOMEM;
        goto fail;
    }
    if (pthread_create(&s->sched, NULL, gpt2c_srv_sched_main, s) != 0) {
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "server: cannot start the scheduler thread");
        goto fail;
    }
    s->sched_started = 1;
    const unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                           (v6 ? MHD_USE_IPv6 : 0);
    s->d = MHD_start_daemon(flags, (uint16_t)c.port, NULL, NULL, on_request, s, MHD_OPTION_SOCK_ADDR,
                            v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4, MHD_OPTION_NOTIFY_COMPLETED,
                            on_completed, s, MHD_OPTION_CONNECTION_LIMIT, (unsigned)c.max_connections,
                            MHD_OPTION_CONNECTION_TIMEOUT, 120u, MHD_OPTION_EXTERNAL_LOGGER, no_log, NULL,
                            MHD_OPTION_END);
    if (!s->d) {
        st = gpt2c_fail(GPT2C_ERR_IO, "port: cannot listen on %s port %d (in use, or not permitted)", host, c.port);
        goto fail;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = di ? di->port : c.port;
    *out = s;
    return GPT2C_OK;
fail:
    gpt2c_server_free(s);
    return st;
}

int gpt2c_server_port(const gpt2c_server *s) { return s->port; }

void gpt2c_server_pause(gpt2c_server *s, int paused) {
    pthread_mutex_lock(&s->mu);
    s->paused = paused != 0;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
}

void gpt2c_server_drain(gpt2c_server *s) {
    if (!s || s->drained) return;
    pthread_mutex_lock(&s->mu);
    s->draining = 1;
    s->paused = 0;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    if (s->d) {
        /* no new connections; the open ones finish their requests */
        const MHD_socket lsock = MHD_quiesce_daemon(s->d);
        pthread_mutex_lock(&s->mu);
        while (s->live > 0) pthread_cond_wait(&s->idle, &s->mu);
        pthread_mutex_unlock(&s->mu);
        MHD_stop_daemon(s->d);
        if (lsock != MHD_INVALID_SOCKET) close(lsock);
        s->d = NULL;
    }
    if (s->sched_started) {
        pthread_mutex_lock(&s->mu);
        s->stop = 1;
        pthread_cond_signal(&s->work);
        pthread_mutex_unlock(&s->mu);
        pthread_join(s->sched, NULL);
        s->sched_started = 0;
    }
    s->drained = 1;
}

void gpt2c_server_free(gpt2c_server *s) {
    if (!s) return;
    gpt2c_server_drain(s);
    gpt2c_infer_free(s->inf);
    gpt2c_free(s->logits);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->work);
    pthread_cond_destroy(&s->idle);
    free(s);
}

void gpt2c_server_stats(gpt2c_server *s, gpt2c_serve_stats *out) {
    pthread_mutex_lock(&s->mu);
    *out = s->st;
    pthread_mutex_unlock(&s->mu);
}
