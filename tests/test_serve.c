/* gpt2c serve, in process: a server on a free loopback port driven by a small
 * HTTP/1.1 client (below).  Completions equal gpt2c_generate (what `gpt2c
 * generate` prints) for the same prompt and seed; streaming equals the whole
 * answer; stop strings; 32 concurrent clients all answered correctly; each bad
 * request gets 400/404/405/413 with a JSON error naming the field; a client
 * that leaves frees its slot; drain finishes the request in flight. */
#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "gpt2c/infer.h"
#include "gpt2c/model.h"
#include "gpt2c/serve.h"
#include "gpt2c/tokenizer.h"
#include "serve/serve_internal.h"
#include "testutil.h"

static gpt2c_model *model;
static gpt2c_tokenizer *tok;
static int port;

/* ---- a small HTTP/1.1 client (Connection: close; chunked bodies decoded) ---- */
static int connect_local(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct timeval tv = {30, 0}; /* a broken server fails the test instead of hanging it */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_request(int fd, const char *method, const char *path, const char *body) {
    char head[512];
    const size_t bl = body ? strlen(body) : 0;
    const int n = snprintf(head, sizeof head,
                           "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                           "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                           method, path, bl);
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) != n) return -1;
    for (size_t off = 0; off < bl;) {
        const ssize_t w = send(fd, body + off, bl - off, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        off += (size_t)w;
    }
    return 0;
}

/* status code, body (malloc'd, dechunked); -1 on a transport failure */
static int http(const char *method, const char *path, const char *body, char **out) {
    *out = NULL;
    int fd = connect_local();
    if (fd < 0 || send_request(fd, method, path, body)) {
        if (fd >= 0) close(fd);
        return -1;
    }
    srv_buf b = {0};
    char tmp[8192];
    ssize_t got;
    while ((got = recv(fd, tmp, sizeof tmp, 0)) > 0) gpt2c_srv_buf_add(&b, tmp, (size_t)got);
    close(fd);
    int status = -1;
    char *hend = b.p ? strstr(b.p, "\r\n\r\n") : NULL;
    if (!hend || sscanf(b.p, "HTTP/1.%*d %d", &status) != 1) {
        gpt2c_srv_buf_free(&b);
        return -1;
    }
    *hend = 0;
    const int chunked = strcasestr(b.p, "transfer-encoding: chunked") != NULL;
    const char *p = hend + 4, *end = b.p + b.len;
    srv_buf o = {0};
    gpt2c_srv_buf_add(&o, "", 0);
    if (!chunked) {
        gpt2c_srv_buf_add(&o, p, (size_t)(end - p));
    } else {
        for (;;) {
            char *e;
            const unsigned long n = strtoul(p, &e, 16);
            const char *data = strstr(p, "\r\n");
            if (!data || n == 0 || data + 2 + n > end) break;
            gpt2c_srv_buf_add(&o, data + 2, n);
            p = data + 2 + n + 2;
        }
    }
    gpt2c_srv_buf_free(&b);
    *out = o.p;
    return status;
}

/* ---- expected answers: gpt2c_generate with the same prompt and sampling ---- */
typedef struct {
    srv_buf bytes;
    int n, eot;
} collect;
static int on_tok(void *user, int seq, int32_t id) {
    (void)seq;
    collect *c = user;
    if (id == c->eot) return 0;
    const char *p;
    size_t len;
    if (gpt2c_tokenizer_token_bytes(tok, id, &p, &len) == GPT2C_OK) gpt2c_srv_buf_add(&c->bytes, p, len);
    c->n++;
    return 0;
}

/* generate's bytes, as valid UTF-8 (the server must send JSON strings); *n tokens */
static char *expected(const char *prompt, int max_tokens, float temp, int top_k, float top_p, uint64_t seed, int *n,
                      int *valid_utf8) {
    int32_t *ids = NULL;
    size_t nids = 0;
    if (gpt2c_tokenizer_encode(tok, prompt, strlen(prompt), 1, &ids, &nids) != GPT2C_OK) return NULL;
    gpt2c_infer *s = NULL;
    gpt2c_sampler *smp = NULL;
    gpt2c_sampling sp = {temp, top_k, top_p, seed};
    collect c = {{0}, 0, gpt2c_tokenizer_eot(tok)};
    gpt2c_srv_buf_add(&c.bytes, "", 0);
    if (gpt2c_infer_create(model, 1, (int)nids + max_tokens, 0, &s) != GPT2C_OK ||
        gpt2c_sampler_create(&sp, gpt2c_model_config(model)->vocab_size, 1, &smp) != GPT2C_OK ||
        gpt2c_generate(s, smp, ids, (int)nids, max_tokens, c.eot, on_tok, &c, NULL) != GPT2C_OK) {
        fprintf(stderr, "generate: %s\n", gpt2c_errmsg());
    }
    gpt2c_sampler_free(smp);
    gpt2c_infer_free(s);
    free(ids);
    srv_utf8 u = {{0}, 0};
    srv_buf fixed = {0};
    gpt2c_srv_buf_add(&fixed, "", 0);
    gpt2c_srv_utf8_feed(&u, (const unsigned char *)c.bytes.p, c.bytes.len, 1, &fixed);
    *valid_utf8 = fixed.len == c.bytes.len && memcmp(fixed.p, c.bytes.p, c.bytes.len) == 0;
    gpt2c_srv_buf_free(&c.bytes);
    *n = c.n;
    return fixed.p;
}

static char *completion_body(const char *prompt, int max_tokens, float temp, int top_k, float top_p, uint64_t seed,
                             int stream, const char *stop) {
    json_t *o = json_pack("{s:s, s:i, s:f, s:i, s:f, s:I, s:b}", "prompt", prompt, "max_tokens", max_tokens,
                          "temperature", (double)temp, "top_k", top_k, "top_p", (double)top_p, "seed", (json_int_t)seed,
                          "stream", stream);
    if (stop) json_object_set_new(o, "stop", json_string(stop));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* the text of an answer (whole, or the events of a stream joined); finish reason and usage */
typedef struct {
    int status;
    char *text;
    char finish[16];
    int completion_tokens;
    int events;
    int done_marker;
} answer;

static void answer_free(answer *a) { free(a->text); }

static answer complete(const char *body, int stream) {
    answer a = {0};
    char *resp = NULL;
    a.status = http("POST", "/v1/completions", body, &resp);
    srv_buf text = {0};
    gpt2c_srv_buf_add(&text, "", 0);
    if (a.status == 200 && !stream) {
        json_t *o = json_loads(resp, 0, NULL);
        json_t *ch = json_array_get(json_object_get(o, "choices"), 0);
        const char *t = json_string_value(json_object_get(ch, "text"));
        if (t) gpt2c_srv_buf_add(&text, t, json_string_length(json_object_get(ch, "text")));
        const char *f = json_string_value(json_object_get(ch, "finish_reason"));
        snprintf(a.finish, sizeof a.finish, "%s", f ? f : "");
        a.completion_tokens = (int)json_integer_value(json_object_get(json_object_get(o, "usage"), "completion_tokens"));
        json_decref(o);
    } else if (a.status == 200) {
        char *save = NULL;
        for (char *line = strtok_r(resp, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            if (strncmp(line, "data: ", 6) != 0) continue;
            if (strcmp(line + 6, "[DONE]") == 0) {
                a.done_marker = 1;
                continue;
            }
            json_t *o = json_loads(line + 6, 0, NULL);
            json_t *ch = json_array_get(json_object_get(o, "choices"), 0);
            json_t *t = json_object_get(ch, "text");
            if (t) gpt2c_srv_buf_add(&text, json_string_value(t), json_string_length(t));
            const char *f = json_string_value(json_object_get(ch, "finish_reason"));
            if (f) snprintf(a.finish, sizeof a.finish, "%s", f);
            a.events++;
            json_decref(o);
        }
    }
    free(resp);
    a.text = text.p;
    return a;
}

/* ---- the tests ------------------------------------------------------------------- */
static void test_utf8_repair(void) {
    /* Unicode 15, section 3.9 (U+FFFD substitution of maximal subparts), the example of Table 3-11 */
    const char in[] = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
    const char want[] = "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "b\xEF\xBF\xBD" "c\xEF\xBF\xBD\xEF\xBF\xBD" "d";
    for (size_t split = 0; split <= sizeof in - 1; split++) { /* fed in two parts, any split */
        srv_utf8 u = {{0}, 0};
        srv_buf o = {0};
        gpt2c_srv_utf8_feed(&u, (const unsigned char *)in, split, 0, &o);
        gpt2c_srv_utf8_feed(&u, (const unsigned char *)in + split, sizeof in - 1 - split, 1, &o);
        CHECK_MSG(o.len == sizeof want - 1 && memcmp(o.p, want, o.len) == 0, "utf8 repair, split at %zu", split);
        gpt2c_srv_buf_free(&o);
    }
    /* a character cut between tokens is held, then completed; surrogates and overlongs are replaced */
    srv_utf8 u = {{0}, 0};
    srv_buf o = {0};
    gpt2c_srv_utf8_feed(&u, (const unsigned char *)"\xE2\x82", 2, 0, &o);
    CHECK(o.len == 0);
    gpt2c_srv_utf8_feed(&u, (const unsigned char *)"\xAC\xED\xA0\x80\xC0\xAF", 6, 1, &o);
    CHECK(o.p && strcmp(o.p, "\xE2\x82\xAC\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD") == 0);
    gpt2c_srv_buf_free(&o);
    /* stop strings: cut before the first, held back while it may still come */
    const char *stops[2] = {"END", "xyz"};
    srv_text t = {0};
    CHECK(gpt2c_srv_text_add(&t, stops, 2, "abc E", 5, 0) == 0 && t.safe == 4);
    CHECK(gpt2c_srv_text_add(&t, stops, 2, "N", 1, 0) == 0 && t.safe == 4);
    CHECK(gpt2c_srv_text_add(&t, stops, 2, "Dtail", 5, 0) == 1 && t.text.len == 4 && memcmp(t.text.p, "abc ", 4) == 0);
    gpt2c_srv_buf_free(&t.text);
    srv_text t2 = {0};
    CHECK(gpt2c_srv_text_add(&t2, stops, 2, "ab x", 4, 0) == 0 && t2.safe == 3);
    CHECK(gpt2c_srv_text_add(&t2, stops, 2, "y", 1, 0) == 0 && t2.safe == 3);
    CHECK(gpt2c_srv_text_add(&t2, NULL, 0, NULL, 0, 1) == 0 && t2.safe == 5); /* the end: all of it */
    gpt2c_srv_buf_free(&t2.text);
}

static void test_routes(void) {
    char *r = NULL;
    CHECK(http("GET", "/health", NULL, &r) == 200 && r && strstr(r, "\"status\":\"ok\""));
    free(r);
    CHECK(http("GET", "/v1/models", NULL, &r) == 200 && r && strstr(r, "\"id\":\"tiny\"") && strstr(r, "\"object\":\"list\""));
    free(r);
    CHECK(http("GET", "/nope", NULL, &r) == 404 && r && strstr(r, "\"error\""));
    free(r);
    CHECK(http("GET", "/v1/completions", NULL, &r) == 405);
    free(r);
    CHECK(http("POST", "/health", "{}", &r) == 405);
    free(r);
}

typedef struct {
    const char *prompt;
    int max_tokens, top_k;
    float temp, top_p;
    uint64_t seed;
} case_t;
static const case_t CASES[] = {
    {"The meaning of life is", 24, 0, 0.0f, 1.0f, 1},
    {"Once upon a time", 20, 40, 0.9f, 0.95f, 7},
    {"ROMEO:\nBut soft, what light", 16, 0, 1.0f, 1.0f, 123},
    {"a", 30, 5, 1.3f, 0.8f, 99},
};

static void test_equals_generate(void) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const case_t *c = &CASES[i];
        int n = 0, valid = 0;
        char *want = expected(c->prompt, c->max_tokens, c->temp, c->top_k, c->top_p, c->seed, &n, &valid);
        for (int stream = 0; stream < 2; stream++) {
            char *body = completion_body(c->prompt, c->max_tokens, c->temp, c->top_k, c->top_p, c->seed, stream, NULL);
            answer a = complete(body, stream);
            CHECK_MSG(a.status == 200, "case %zu stream %d: status %d", i, stream, a.status);
            CHECK_MSG(a.text && want && strcmp(a.text, want) == 0, "case %zu stream %d: '%s' != generate's '%s'%s", i,
                      stream, a.text, want, valid ? "" : " (repaired UTF-8)");
            CHECK(strcmp(a.finish, n < c->max_tokens ? "stop" : "length") == 0);
            if (!stream) CHECK_MSG(a.completion_tokens == n, "case %zu: %d tokens, generate %d", i, a.completion_tokens, n);
            if (stream) CHECK(a.done_marker && a.events >= 2);
            answer_free(&a);
            free(body);
        }
        /* a stop string taken from the answer: the text ends before its first occurrence */
        const size_t wl = strlen(want);
        if (wl >= 8) {
            char stop[4];
            memcpy(stop, want + wl / 2, 3);
            stop[3] = 0;
            const size_t cut = (size_t)(strstr(want, stop) - want);
            for (int stream = 0; stream < 2; stream++) {
                char *body = completion_body(c->prompt, c->max_tokens, c->temp, c->top_k, c->top_p, c->seed, stream, stop);
                answer a = complete(body, stream);
                CHECK_MSG(a.status == 200 && a.text && strlen(a.text) == cut && strncmp(a.text, want, cut) == 0 &&
                              strcmp(a.finish, "stop") == 0,
                          "case %zu stream %d, stop '%s': got '%s' (%s)", i, stream, stop, a.text, a.finish);
                answer_free(&a);
                free(body);
            }
        }
        free(want);
    }
    /* a prompt as token ids answers as the same text */
    char *r = NULL;
    CHECK(http("POST", "/v1/completions", "{\"prompt\":[464,3616,286,1204,318],\"max_tokens\":24,\"temperature\":0}", &r) ==
          200);
    json_t *o = json_loads(r ? r : "", 0, NULL);
    int n, valid;
    char *want = expected("The meaning of life is", 24, 0, 0, 1, 1, &n, &valid);
    const char *t = json_string_value(json_object_get(json_array_get(json_object_get(o, "choices"), 0), "text"));
    CHECK_MSG(t && want && strcmp(t, want) == 0, "prompt as ids: '%s' != '%s'", t, want);
    json_decref(o);
    free(want);
    free(r);
}

/* 32 clients at once (8 slots: the rest queue), half streaming */
typedef struct {
    int i;
    char *want;
    int ok;
} client_arg;
static void *client(void *p) {
    client_arg *c = p;
    const case_t *k = &CASES[c->i % 4];
    char *body = completion_body(k->prompt, 6 + c->i % 7, k->temp == 0 ? 0.7f : k->temp, k->top_k, k->top_p,
                                 1000 + (uint64_t)c->i, c->i % 2, NULL);
    answer a = complete(body, c->i % 2);
    c->ok = a.status == 200 && a.text && strcmp(a.text, c->want) == 0;
    if (!c->ok) fprintf(stderr, "client %d: status %d, '%s' != '%s'\n", c->i, a.status, a.text, c->want);
    answer_free(&a);
    free(body);
    return NULL;
}
static void test_concurrent(void) {
    enum { N = 32 };
    client_arg args[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        const case_t *k = &CASES[i % 4];
        int n, valid;
        args[i].i = i;
        args[i].want = expected(k->prompt, 6 + i % 7, k->temp == 0 ? 0.7f : k->temp, k->top_k, k->top_p,
                                1000 + (uint64_t)i, &n, &valid);
    }
    for (int i = 0; i < N; i++) pthread_create(&th[i], NULL, client, &args[i]);
    int ok = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        ok += args[i].ok;
        free(args[i].want);
    }
    CHECK_MSG(ok == N, "%d of %d concurrent clients answered correctly", ok, N);
}

static void test_bad_requests(void) {
    static char longids[4096], longprompt[4096];
    char *p = longids + sprintf(longids, "{\"prompt\":[");
    for (int i = 0; i < 200; i++) p += sprintf(p, "%s%d", i ? "," : "", 100 + i);
    sprintf(p, "]}");
    p = longprompt + sprintf(longprompt, "{\"prompt\":[");
    for (int i = 0; i < 100; i++) p += sprintf(p, "%s%d", i ? "," : "", 100 + i);
    sprintf(p, "],\"max_tokens\":50}");
    const struct {
        const char *body;
        int status;
        const char *param; /* NULL: JSON null */
    } bad[] = {
        {"{\"prompt\":\"hi\",", 400, NULL},               /* malformed JSON */
        {"", 400, NULL},                                  /* empty body */
        {"[1,2]", 400, NULL},                             /* not an object */
        {"{\"prompt\":\"hi\",\"prompt\":\"x\"}", 400, NULL}, /* duplicate key */
        {"{\"max_tokens\":4}", 400, "prompt"},
        {"{\"prompt\":5}", 400, "prompt"},
        {"{\"prompt\":\"\"}", 400, "prompt"},
        {"{\"prompt\":[\"a\",\"b\"]}", 400, "prompt"},
        {"{\"prompt\":[1,-2]}", 400, "prompt"},
        {"{\"prompt\":[1,50257]}", 400, "prompt"},
        {longids, 400, "prompt"},                         /* longer than the context (128) */
        {longprompt, 400, "max_tokens"},                  /* 100 + 50 > 128 */
        {"{\"prompt\":\"hi\",\"max_tokens\":\"8\"}", 400, "max_tokens"},
        {"{\"prompt\":\"hi\",\"max_tokens\":-1}", 400, "max_tokens"},
        {"{\"prompt\":\"hi\",\"max_tokens\":2.5}", 400, "max_tokens"},
        {"{\"prompt\":\"hi\",\"temperature\":\"hot\"}", 400, "temperature"},
        {"{\"prompt\":\"hi\",\"temperature\":-1}", 400, "temperature"},
        {"{\"prompt\":\"hi\",\"top_p\":0}", 400, "top_p"},
        {"{\"prompt\":\"hi\",\"top_p\":1.5}", 400, "top_p"},
        {"{\"prompt\":\"hi\",\"top_k\":-3}", 400, "top_k"},
        {"{\"prompt\":\"hi\",\"top_k\":true}", 400, "top_k"},
        {"{\"prompt\":\"hi\",\"seed\":\"1\"}", 400, "seed"},
        {"{\"prompt\":\"hi\",\"stop\":5}", 400, "stop"},
        {"{\"prompt\":\"hi\",\"stop\":[\"a\",\"\"]}", 400, "stop"},
        {"{\"prompt\":\"hi\",\"stop\":[\"a\",\"b\",\"c\",\"d\",\"e\"]}", 400, "stop"},
        {"{\"prompt\":\"hi\",\"stream\":\"yes\"}", 400, "stream"},
        {"{\"prompt\":\"hi\",\"n\":2}", 400, "n"},
        {"{\"prompt\":\"hi\",\"model\":3}", 400, "model"},
        {"{\"prompt\":\"hi\",\"foo\":{}}", 400, "foo"}, /* unknown field */
        {"{\"prompt\":\"hi\",\"logit_bias\":{\"1\":5}}", 400, "logit_bias"},
        {"{\"prompt\":\"hi\",\"echo\":true}", 400, "echo"},
        {"{\"prompt\":\"hi\",\"presence_penalty\":0.5}", 400, "presence_penalty"},
        {"{\"prompt\":\"hi\",\"logprobs\":3}", 400, "logprobs"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *r = NULL;
        const int st = http("POST", "/v1/completions", bad[i].body, &r);
        json_t *o = json_loads(r ? r : "", 0, NULL);
        json_t *e = json_object_get(o, "error");
        json_t *param = json_object_get(e, "param");
        const int param_ok = bad[i].param ? json_is_string(param) && strcmp(json_string_value(param), bad[i].param) == 0
                                          : json_is_null(param);
        CHECK_MSG(st == bad[i].status && json_is_string(json_object_get(e, "message")) && param_ok,
                  "bad request %zu (%.60s): status %d, answer %.200s", i, bad[i].body, st, r);
        json_decref(o);
        free(r);
    }
    /* what some OpenAI clients always send, at neutral values: accepted */
    char *ok = NULL;
    const int okst = http("POST", "/v1/completions",
                          "{\"prompt\":\"hi\",\"max_tokens\":2,\"n\":1,\"echo\":false,\"logprobs\":null,\"presence_penalty\":0,"
                          "\"frequency_penalty\":0.0,\"logit_bias\":{},\"best_of\":1,\"suffix\":null,\"user\":\"u\",\"model\":\"x\"}",
                          &ok);
    CHECK_MSG(okst == 200, "neutral OpenAI fields: %d %.200s", okst, ok);
    free(ok);
    /* a body over the limit (4096 bytes here): 413, named */
    char *big = malloc(6000);
    memset(big, ' ', 5999);
    big[5999] = 0;
    memcpy(big, "{\"prompt\":\"", 11);
    big[5997] = '"';
    big[5998] = '}';
    char *r = NULL;
    const int st = http("POST", "/v1/completions", big, &r);
    CHECK_MSG(st == 413 && r && strstr(r, "\"param\":\"body\""), "oversized body: %d %.200s", st, r);
    free(r);
    free(big);
}

static double metric(const char *name) {
    char *r = NULL;
    double v = -1;
    if (http("GET", "/metrics", NULL, &r) == 200 && r) {
        char key[128];
        snprintf(key, sizeof key, "\n%s ", name);
        const char *p = strstr(r, key);
        if (p) v = strtod(p + strlen(key), NULL);
    }
    free(r);
    return v;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* until the server holds `active` requests (bounded: ~20 s) */
static int wait_active(gpt2c_server *srv, int active) {
    gpt2c_serve_stats st = {0};
    for (int i = 0; i < 1000; i++) {
        gpt2c_server_stats(srv, &st);
        if (st.active == active && st.queue_depth == 0) return 1;
        sleep_ms(20);
    }
    return 0;
}

/* clients that leave before their answer: their slots are freed.  The
 * scheduler is paused so the tiny model cannot finish first: one waits for a
 * whole answer, one for a stream; both are in slots when they leave. */
static void test_disconnect(gpt2c_server *srv) {
    gpt2c_serve_stats st0, st;
    gpt2c_server_stats(srv, &st0);
    gpt2c_server_pause(srv, 1);
    int fd[2];
    for (int stream = 0; stream < 2; stream++) {
        fd[stream] = connect_local();
        char *body = completion_body("The meaning of life is", 100, 1.0f, 0, 1.0f, 5, stream, NULL);
        CHECK(fd[stream] >= 0 && send_request(fd[stream], "POST", "/v1/completions", body) == 0);
        free(body);
    }
    CHECK_MSG(wait_active(srv, 2), "two requests in slots");
    for (int i = 0; i < 2; i++) close(fd[i]);
    int freed = 0;
    for (int i = 0; i < 1000 && !freed; i++) { /* bounded: ~20 s */
        gpt2c_server_stats(srv, &st);
        freed = st.active == 0 && st.cancelled == st0.cancelled + 2;
        if (!freed) sleep_ms(20);
    }
    CHECK_MSG(freed, "slots freed after clients left: active %d, cancelled %llu (before %llu)", st.active, st.cancelled,
              st0.cancelled);
    gpt2c_server_pause(srv, 0);
    /* and the server goes on serving */
    answer a = complete("{\"prompt\":\"a\",\"max_tokens\":3,\"temperature\":0}", 0);
    CHECK(a.status == 200 && strcmp(a.finish, "length") == 0);
    answer_free(&a);
    CHECK(metric("gpt2c_completions_cancelled_total") == (double)(st0.cancelled + 2));
}

/* drain: the request in flight finishes and is delivered; then nothing listens */
static void *slow_client(void *p) {
    char *body = completion_body("Once upon a time", 60, 1.0f, 0, 1.0f, 3, 0, NULL);
    answer *a = p;
    *a = complete(body, 0);
    free(body);
    return NULL;
}
static void test_drain(gpt2c_server *srv) {
    answer a = {0};
    pthread_t th;
    gpt2c_server_pause(srv, 1); /* so the request is surely in flight when the drain starts */
    pthread_create(&th, NULL, slow_client, &a);
    CHECK(wait_active(srv, 1));
    gpt2c_server_drain(srv);
    pthread_join(th, NULL);
    CHECK_MSG(a.status == 200 && (strcmp(a.finish, "length") == 0 ? a.completion_tokens == 60 : strcmp(a.finish, "stop") == 0),
              "drained request: status %d, %d tokens, %s", a.status, a.completion_tokens, a.finish);
    answer_free(&a);
    const int fd = connect_local();
    CHECK_MSG(fd < 0, "still listening after drain");
    if (fd >= 0) close(fd);
}

int main(void) {
    test_utf8_repair();
    const char *data = tu_shared_data();
    if (!data) {
        printf("SKIP (server part): no shared data (GPT-2 vocabulary)\n");
        return tu_failures ? 1 : 77;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/gpt2-tokenizer", data);
    CHECK_OK(gpt2c_tokenizer_load(dir, &tok));
    /* a tiny random GPT-2 over the real vocabulary: random tokens, broken UTF-8 and all */
    gpt2c_config cfg = {.max_seq_len = 128, .vocab_size = 50257, .num_layers = 2, .num_heads = 4, .channels = 64};
    CHECK_OK(gpt2c_config_check(&cfg, "tiny"));
    CHECK_OK(gpt2c_model_create(&cfg, &model));
    if (!tok || !model) return tu_finish("test_serve");
    gpt2c_model_init_random(model, 11);
    gpt2c_set_threads(2);
    gpt2c_serve_config sc = gpt2c_serve_config_default();
    sc.port = 0; /* any free port, loopback only */
    sc.max_batch = 8;
    sc.slots = 8;
    sc.threads = 2;
    sc.max_body = 4096;
    sc.prefill_chunk = 64;
    sc.model_name = "tiny";
    gpt2c_server *srv = NULL;
    CHECK_OK(gpt2c_server_start(model, tok, &sc, &srv));
    if (!srv) return tu_finish("test_serve");
    port = gpt2c_server_port(srv);
    CHECK(port > 0);
    /* refused configurations */
    gpt2c_server *other = NULL;
    gpt2c_serve_config bad = sc;
    bad.host = "example.org";
    CHECK_FAILS(gpt2c_server_start(model, tok, &bad, &other), GPT2C_ERR_ARG);
    bad = sc;
    bad.port = port; /* in use */
    CHECK_FAILS(gpt2c_server_start(model, tok, &bad, &other), GPT2C_ERR_IO);
    bad = sc;
    bad.ctx = 4096;
    CHECK_FAILS(gpt2c_server_start(model, tok, &bad, &other), GPT2C_ERR_ARG);

    test_routes();
    test_equals_generate();
    test_concurrent();
    test_bad_requests();
    test_disconnect(srv);
    gpt2c_serve_stats st;
    gpt2c_server_stats(srv, &st);
    CHECK(st.completions >= 32 && st.rejected >= 30 && st.generated_tokens > 0 && st.queue_depth == 0);
    CHECK(st.ttft_count >= 32 && st.ttft_s > 0);
    CHECK(metric("gpt2c_first_tokens_total") == (double)st.ttft_count);
    test_drain(srv);
    gpt2c_server_free(srv);
    gpt2c_model_free(model);
    gpt2c_tokenizer_free(tok);
    return tu_finish("test_serve");
}
