/* Sampling the next token: greedy, temperature, top-k, top-p, seeded streams. */
#include <math.h>
#include <stdlib.h>

#include "gpt2c/core.h"
#include "gpt2c/infer.h"

struct gpt2c_sampler {
    gpt2c_sampling sp;
    int V, streams;
    gpt2c_rng *rng; /* (streams) */
    float *prob;    /* (V) */
    int32_t *cand;  /* (V) candidate ids */
};

gpt2c_sampling gpt2c_sampling_default(void) { return (gpt2c_sampling){1.0f, 0, 1.0f, 1337}; }

gpt2c_status gpt2c_sampling_check(const gpt2c_sampling *sp) {
    if (!(sp->temperature >= 0) || isinf(sp->temperature))
        return gpt2c_fail(GPT2C_ERR_ARG, "temperature: %g is invalid (want a finite value >= 0; 0 = greedy)",
                          (double)sp->temperature);
    if (sp->top_k < 0) return gpt2c_fail(GPT2C_ERR_ARG, "top-k: %d is invalid (want >= 0; 0 = off)", sp->top_k);
    if (!(sp->top_p > 0 && sp->top_p <= 1))
        return gpt2c_fail(GPT2C_ERR_ARG, "top-p: %g is outside (0, 1]", (double)sp->top_p);
    return GPT2C_OK;
}

gpt2c_status gpt2c_sampler_create(const gpt2c_sampling *sp, int V, int streams, gpt2c_sampler **out) {
    *out = NULL;
    GPT2C_TRY(gpt2c_sampling_check(sp));
    if (V <= 0 || streams <= 0) return gpt2c_fail(GPT2C_ERR_ARG, "sampler: V=%d, streams=%d must be positive", V, streams);
    gpt2c_sampler *s = gpt2c_alloc(sizeof *s, "sampler");
    if (!s) return GPT2C_ERR_NOMEM;
    s->sp = *sp;
    s->V = V;
    s->streams = streams;
    s->rng = gpt2c_alloc(sizeof(gpt2c_rng) * (size_t)streams, "sampler streams");
    s->prob = gpt2c_alloc(sizeof(float) * (size_t)V, "sampler probabilities");
    s->cand = gpt2c_alloc(sizeof(int32_t) * (size_t)V, "sampler candidates");
    if (!s->rng || !s->prob || !s->cand) {
        gpt2c_sampler_free(s);
        return GPT2C_ERR_NOMEM;
    }
    for (int i = 0; i < streams; i++) gpt2c_rng_seed(&s->rng[i], sp->seed, (uint64_t)i);
    *out = s;
    return GPT2C_OK;
}

void gpt2c_sampler_free(gpt2c_sampler *s) {
    if (!s) return;
    gpt2c_free(s->rng);
    gpt2c_free(s->prob);
    gpt2c_free(s->cand);
    gpt2c_free(s);
}

static _Thread_local const float *g_prob; /* qsort has no context argument */
/* descending probability, ties by ascending id: a total order, so the result is reproducible */
static int by_prob_desc(const void *a, const void *b) {
    const int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (g_prob[i] != g_prob[j]) return g_prob[i] > g_prob[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* Min-heap on (prob, -id) of size k: keeps the k largest in O(V log k). */
static int heap_less(const float *p, int32_t a, int32_t b) { return p[a] < p[b] || (p[a] == p[b] && a > b); }
static void heap_down(int32_t *h, int n, int i, const float *p) {
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && heap_less(p, h[l], h[m])) m = l;
        if (r < n && heap_less(p, h[r], h[m])) m = r;
        if (m == i) return;
        int32_t t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

int32_t gpt2c_sampler_next(gpt2c_sampler *s, int stream, const float *logits) {
    const int V = s->V;
    if (s->sp.temperature == 0) { /* greedy: argmax, the lowest id on ties */
        int32_t best = 0;
        for (int i = 1; i < V; i++)
            if (logits[i] > logits[best]) best = i;
        return best;
    }
    const int k = s->sp.top_k, use_k = k > 0 && k < V;
    const float top_p = s->sp.top_p, invT = 1.0f / s->sp.temperature;
    float *p = s->prob;
    int32_t *cand = s->cand;
    int n = 0;
    double total = 1.0; /* the candidates' mass in p */
    if (use_k) {
        /* the top k by logit (a min-heap of size k: O(V log k)); then
         * p = exp((l - max) / T) for those k only: top-k renormalizes anyway */
        for (int i = 0; i < k; i++) cand[n++] = i;
        for (int i = k / 2 - 1; i >= 0; i--) heap_down(cand, n, i, logits);
        for (int i = k; i < V; i++)
            if (heap_less(logits, cand[0], i)) {
                cand[0] = i;
                heap_down(cand, n, 0, logits);
            }
        float maxl = logits[cand[0]];
        for (int i = 1; i < n; i++)
            if (logits[cand[i]] > maxl) maxl = logits[cand[i]];
        total = 0;
        for (int i = 0; i < n; i++) total += p[cand[i]] = expf((logits[cand[i]] - maxl) * invT);
    } else {
        /* p = softmax(logits / T) over all ids */
        float maxl = logits[0];
        for (int i = 1; i < V; i++)
            if (logits[i] > maxl) maxl = logits[i];
        double sum = 0;
        for (int i = 0; i < V; i++) sum += p[i] = expf((logits[i] - maxl) * invT);
        const float inv = (float)(1.0 / sum);
        for (int i = 0; i < V; i++) p[i] *= inv;
        if (top_p < 1) {
            /* Only ids with p >= (1 - top_p) / V can be in the nucleus: the others
             * together hold less than 1 - top_p, so the ids above the cutoff hold
             * more than top_p, and the nucleus (a prefix in sorted order) ends among them. */
            const float cut = (1 - top_p) / (float)V;
            for (int i = 0; i < V; i++)
                if (p[i] >= cut) cand[n++] = i;
        } else {
            for (int i = 0; i < V; i++) cand[n++] = i;
        }
    }
    if (top_p < 1) {
        /* the nucleus: the smallest prefix (most likely first) holding top_p of
         * the mass, measured over the top-k ids when top-k is on (as Hugging Face) */
        g_prob = p;
        qsort(cand, (size_t)n, sizeof *cand, by_prob_desc);
        double mass = 0;
        int keep = 0;
        while (keep < n && mass < top_p * total) mass += p[cand[keep++]];
        n = keep > 0 ? keep : 1;
    }
    /* recompute the kept mass in order, then draw u in [0, mass) */
    double mass = 0;
    for (int i = 0; i < n; i++) mass += p[cand[i]];
    const double u = (double)gpt2c_rng_uniform(&s->rng[stream]) * mass;
    double acc = 0;
    for (int i = 0; i < n; i++) {
        acc += p[cand[i]];
        if (u < acc) return cand[i];
    }
    return cand[n - 1];
}
