/* A completion request's JSON body -> checked parameters (OpenAI's
 * /v1/completions fields, plus top_k); and the JSON bodies of the answers. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/tokenizer.h"
#include "serve/serve_internal.h"

void gpt2c_srv_params_free(srv_params *p) {
    free(p->prompt);
    for (int i = 0; i < p->nstop; i++) free(p->stop[i]);
    memset(p, 0, sizeof *p);
}

#define BAD(field, ...)                                    \
    do {                                                   \
        snprintf(errbuf, errlen, __VA_ARGS__);             \
        *param = (field);                                  \
        goto bad;                                          \
    } while (0)

static int is_int(const json_t *v) { return json_is_integer(v); }
/* an integer, or a number with no fraction (1.0) as JSON writers may send */
static int as_int(const json_t *v, long long *out) {
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    if (json_is_real(v)) {
        const double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 9e15) {
            *out = (long long)d;
            return 1;
        }
    }
    return 0;
}

int gpt2c_srv_parse_completion(const char *body, size_t len, const gpt2c_tokenizer *tok, int V, int ctx, srv_params *out,
                         char *errbuf, size_t errlen, const char **param) {
    memset(out, 0, sizeof *out);
    out->max_tokens = 16; /* OpenAI's default */
    out->sp = gpt2c_sampling_default();
    *param = NULL;
    json_error_t jerr;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        snprintf(errbuf, errlen, "request body: malformed JSON: %s (line %d, column %d)", jerr.text, jerr.line,
                 jerr.column);
        return 400;
    }
    if (!json_is_object(root)) BAD(NULL, "request body: want a JSON object");
    static const char *const known[] = {"model", "prompt", "max_tokens", "temperature", "top_k",  "top_p",
                                        "seed",  "stop",   "stream",     "n",           "user",   "echo",
                                        "logprobs", "presence_penalty", "frequency_penalty", "logit_bias",
                                        "best_of", "suffix"};
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        int ok = 0;
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) ok |= strcmp(key, known[i]) == 0;
        if (!ok) {
            snprintf(errbuf, errlen, "unknown field '%.64s' (known: model, prompt, max_tokens, temperature, top_k, "
                                     "top_p, seed, stop, stream, n, user; echo, logprobs, presence_penalty, "
                                     "frequency_penalty, logit_bias, best_of, suffix at their neutral values)", key);
            /* the name itself is the parameter at fault */
            static _Thread_local char name[80];
            snprintf(name, sizeof name, "%.64s", key);
            *param = name;
            goto bad;
        }
    }
    if ((v = json_object_get(root, "model")) && !json_is_string(v) && !json_is_null(v))
        BAD("model", "model: want a string");
    if ((v = json_object_get(root, "user")) && !json_is_string(v) && !json_is_null(v))
        BAD("user", "user: want a string");
    /* OpenAI fields some clients always send: accepted at their neutral values only */
    if ((v = json_object_get(root, "echo")) && !json_is_null(v) && !json_is_false(v))
        BAD("echo", "echo: not supported (only false)");
    if ((v = json_object_get(root, "logprobs")) && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 0))
        BAD("logprobs", "logprobs: not supported (only null)");
    if ((v = json_object_get(root, "presence_penalty")) && !json_is_null(v) && !(json_is_number(v) && json_number_value(v) == 0))
        BAD("presence_penalty", "presence_penalty: not supported (only 0)");
    if ((v = json_object_get(root, "frequency_penalty")) && !json_is_null(v) && !(json_is_number(v) && json_number_value(v) == 0))
        BAD("frequency_penalty", "frequency_penalty: not supported (only 0)");
    if ((v = json_object_get(root, "logit_bias")) && !json_is_null(v) && !(json_is_object(v) && json_object_size(v) == 0))
        BAD("logit_bias", "logit_bias: not supported (only {} or null)");
    if ((v = json_object_get(root, "best_of")) && !json_is_null(v) && !(json_is_integer(v) && json_integer_value(v) == 1))
        BAD("best_of", "best_of: not supported (only 1)");
    if ((v = json_object_get(root, "suffix")) && !json_is_null(v)) BAD("suffix", "suffix: not supported (only null)");
    if ((v = json_object_get(root, "n")) && !json_is_null(v)) {
        long long n;
        if (!as_int(v, &n)) BAD("n", "n: want an integer");
        if (n != 1) BAD("n", "n: only 1 completion per request is supported (got %lld)", n);
    }
    if ((v = json_object_get(root, "stream")) && !json_is_null(v)) {
        if (!json_is_boolean(v)) BAD("stream", "stream: want true or false");
        out->stream = json_is_true(v);
    }
    if ((v = json_object_get(root, "max_tokens")) && !json_is_null(v)) {
        long long n;
        if (!as_int(v, &n)) BAD("max_tokens", "max_tokens: want an integer");
        if (n < 0 || n > ctx) BAD("max_tokens", "max_tokens: %lld is outside [0, %d] (the context)", n, ctx);
        out->max_tokens = (int)n;
    }
    if ((v = json_object_get(root, "temperature")) && !json_is_null(v)) {
        if (!json_is_number(v)) BAD("temperature", "temperature: want a number");
        const double t = json_number_value(v);
        if (!(t >= 0) || t > 1e6) BAD("temperature", "temperature: %g is invalid (want >= 0; 0 = greedy)", t);
        out->sp.temperature = (float)t;
    }
    if ((v = json_object_get(root, "top_p")) && !json_is_null(v)) {
        if (!json_is_number(v)) BAD("top_p", "top_p: want a number");
        const double t = json_number_value(v);
        if (!(t > 0 && t <= 1)) BAD("top_p", "top_p: %g is outside (0, 1]", t);
        out->sp.top_p = (float)t;
    }
    if ((v = json_object_get(root, "top_k")) && !json_is_null(v)) {
        long long k;
        if (!as_int(v, &k)) BAD("top_k", "top_k: want an integer");
        if (k < 0) BAD("top_k", "top_k: %lld is invalid (want >= 0; 0 = off)", k);
        out->sp.top_k = k > V ? V : (int)k;
    }
    if ((v = json_object_get(root, "seed")) && !json_is_null(v)) {
        if (!is_int(v)) BAD("seed", "seed: want an integer");
        out->sp.seed = (uint64_t)json_integer_value(v);
        out->have_seed = 1;
    }
    if ((v = json_object_get(root, "stop")) && !json_is_null(v)) {
        json_t *one[1] = {v};
        json_t **items = one;
        size_t n = 1;
        if (json_is_array(v)) {
            n = json_array_size(v);
            if (n > SRV_MAX_STOP) BAD("stop", "stop: %zu strings, at most %d", n, SRV_MAX_STOP);
            items = NULL;
        } else if (!json_is_string(v)) {
            BAD("stop", "stop: want a string or an array of strings");
        }
        for (size_t i = 0; i < n; i++) {
            json_t *sv = items ? items[i] : json_array_get(v, i);
            if (!json_is_string(sv)) BAD("stop", "stop: item %zu is not a string", i);
            const size_t sl = json_string_length(sv);
            if (sl == 0) BAD("stop", "stop: item %zu is empty", i);
            if (sl > SRV_MAX_STOP_LEN) BAD("stop", "stop: item %zu is %zu bytes, at most %d", i, sl, SRV_MAX_STOP_LEN);
            out->stop[out->nstop] = strdup(json_string_value(sv));
            if (!out->stop[out->nstop]) BAD("stop", "stop: out of memory");
            out->nstop++;
        }
    }
    v = json_object_get(root, "prompt");
    if (!v || json_is_null(v)) BAD("prompt", "prompt: required (a string, or an array of token ids)");
    if (json_is_string(v)) {
        size_t nids = 0;
        if (!tok) BAD("prompt", "prompt: text needs a tokenizer (send token ids)");
        if (gpt2c_tokenizer_encode(tok, json_string_value(v), json_string_length(v), 1, &out->prompt, &nids) != GPT2C_OK)
            BAD("prompt", "prompt: %s", gpt2c_errmsg());
        if (nids > (size_t)ctx) BAD("prompt", "prompt: %zu tokens do not fit the context of %d", nids, ctx);
        out->n_prompt = (int)nids;
    } else if (json_is_array(v)) {
        const size_t n = json_array_size(v);
        if (n > 0 && json_is_string(json_array_get(v, 0)))
            BAD("prompt", "prompt: a list of prompts is not supported (send one request per prompt)");
        if (n > (size_t)ctx) BAD("prompt", "prompt: %zu tokens do not fit the context of %d", n, ctx);
        out->prompt = malloc(sizeof(int32_t) * (n ? n : 1));
        if (!out->prompt) BAD("prompt", "prompt: out of memory");
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(v, i);
            if (!json_is_integer(e)) BAD("prompt", "prompt: item %zu is not a token id (integer)", i);
            const long long id = json_integer_value(e);
            if (id < 0 || id >= V) BAD("prompt", "prompt: token id %lld at %zu is outside the vocabulary [0, %d)", id, i, V);
            out->prompt[i] = (int32_t)id;
        }
        out->n_prompt = (int)n;
    } else {
        BAD("prompt", "prompt: want a string or an array of token ids");
    }
    if (out->n_prompt == 0) BAD("prompt", "prompt: empty (need at least one token)");
    if (out->n_prompt + out->max_tokens > ctx)
        BAD("max_tokens", "max_tokens: prompt (%d tokens) + max_tokens (%d) exceeds the context of %d (at most %d fit)",
            out->n_prompt, out->max_tokens, ctx, ctx - out->n_prompt);
    json_decref(root);
    return 0;
bad:
    if (root) json_decref(root);
    gpt2c_srv_params_free(out);
    return 400;
}

static char *dump(json_t *o) {
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return s;
}

char *gpt2c_srv_json_error(const char *msg, const char *type, const char *param) {
    json_t *e = json_pack("{s:s, s:s, s:o, s:n}", "message", msg, "type", type, "param",
                          param ? json_string(param) : json_null(), "code");
    /* a message that is not UTF-8 (it quotes the request) cannot go into JSON as is */
    if (!e) e = json_pack("{s:s, s:s, s:n, s:n}", "message", "invalid request", "type", type, "param", "code");
    return dump(json_pack("{s:o}", "error", e));
}

/* One completion object: the whole answer (final, with usage), or one
 * server-sent event of a stream (text so far; the last one has the finish reason). */
char *gpt2c_srv_json_completion(const gpt2c_server *s, const srv_req *r, const char *text, size_t len, int final) {
    json_t *choice = json_pack("{s:s%, s:i, s:n, s:o}", "text", text, len, "index", 0, "logprobs", "finish_reason",
                               final && r->finish ? json_string(r->finish) : json_null());
    char id[48];
    snprintf(id, sizeof id, "cmpl-%llu", r->id);
    json_t *o = json_pack("{s:s, s:s, s:I, s:s, s:[o]}", "id", id, "object", "text_completion", "created",
                          (json_int_t)r->created, "model", s->cfg.model_name, "choices", choice);
    if (o && final && !r->p.stream)
        json_object_set_new(o, "usage",
                            json_pack("{s:i, s:i, s:i}", "prompt_tokens", r->p.n_prompt, "completion_tokens",
                                      r->generated, "total_tokens", r->p.n_prompt + r->generated));
    return dump(o);
}

char *gpt2c_srv_json_models(const gpt2c_server *s) {
    return dump(json_pack("{s:s, s:[{s:s, s:s, s:I, s:s, s:i}]}", "object", "list", "data", "id", s->cfg.model_name,
                          "object", "model", "created", (json_int_t)0, "owned_by", "gpt2c", "context_length",
                          s->cfg.ctx));
}
