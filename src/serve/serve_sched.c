/* The scheduler: one thread owns the model and the KV cache.  Each turn:
 *   1. admit queued requests into free slots (and drop cancelled ones),
 *   2. run ONE prefill chunk (at most prefill_chunk tokens) of the oldest
 *      request still reading its prompt; when its prompt is in, sample its
 *      first token,
 *   3. run ONE decode step for up to max_batch generating requests (each at
 *      its own position: gpt2c_infer_decode_some), round robin when more are
 *      running, and sample each one's next token,
 *   4. publish the tokens (text, stop strings, finish) under the mutex and
 *      wake the connections waiting on them.
 * So a running stream waits at most one prefill chunk between its tokens,
 * however long the prompts that arrive. */
#include <stdlib.h>
#include <string.h>

#include "gpt2c/core.h"
#include "gpt2c/tokenizer.h"
#include "serve/serve_internal.h"

void gpt2c_srv_req_release_locked(gpt2c_server *s, srv_req *r) {
    if (--r->refs > 0) return;
    gpt2c_srv_params_free(&r->p);
    gpt2c_srv_buf_free(&r->out.text);
    gpt2c_sampler_free(r->smp);
    pthread_cond_destroy(&r->cv);
    free(r);
    pthread_cond_broadcast(&s->idle);
}

int gpt2c_srv_submit(gpt2c_server *s, srv_req *r) {
    pthread_mutex_lock(&s->mu);
    if (s->draining || s->nqueue >= s->cfg.max_queue) {
        const int why = s->draining ? 1 : 2;
        pthread_mutex_unlock(&s->mu);
        return why;
    }
    r->id = ++s->next_id;
    r->slot = -1;
    r->t_submit = gpt2c_now_ns();
    r->refs = 2;
    if (!r->p.have_seed) r->p.sp.seed = gpt2c_now_ns() ^ (r->id * 0x9E3779B97F4A7C15ull);
    if (r->p.max_tokens == 0) { /* nothing to generate */
        r->done = 1;
        r->finish = "length";
        r->refs = 1;
        s->st.completions++;
        pthread_mutex_unlock(&s->mu);
        return 0;
    }
    if (s->queue_tail)
        s->queue_tail->next = r;
    else
        s->queue = r;
    s->queue_tail = r;
    s->nqueue++;
    s->st.queue_depth = s->nqueue;
    pthread_cond_signal(&s->work);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Marks r finished (mutex held): flushes its text, wakes its connection. */
static void finish_locked(gpt2c_server *s, srv_req *r, const char *why) {
    if (gpt2c_srv_text_add(&r->out, (const char *const *)r->p.stop, r->p.nstop, NULL, 0, 1) == 1) why = "stop";
    r->finish = why;
    r->done = 1;
    s->st.completions++;
    pthread_cond_broadcast(&r->cv);
}

/* A sampled id (mutex held).  Returns 1 when r has finished. */
static int publish_locked(gpt2c_server *s, srv_req *r, int sampled, int32_t id) {
    s->st.generated_tokens++;
    if (sampled == 1) {
        s->st.ttft_s += (double)(gpt2c_now_ns() - r->t_submit) * 1e-9;
        s->st.ttft_count++;
    }
    if (id == s->eot) {
        finish_locked(s, r, "stop");
        return 1;
    }
    const char *bytes = "";
    size_t len = 0;
    if (gpt2c_tokenizer_token_bytes(s->tok, id, &bytes, &len) != GPT2C_OK) len = 0;
    r->generated++;
    const int rc = gpt2c_srv_text_add(&r->out, (const char *const *)r->p.stop, r->p.nstop, bytes, len, 0);
    if (rc != 0) { /* a stop string (or out of memory: end it there) */
        finish_locked(s, r, "stop");
        return 1;
    }
    if (sampled >= r->p.max_tokens) {
        finish_locked(s, r, "length");
        return 1;
    }
    pthread_cond_broadcast(&r->cv);
    return 0;
}

void *gpt2c_srv_sched_main(void *arg) {
    gpt2c_server *s = arg;
    gpt2c_set_threads(s->cfg.threads); /* the OpenMP setting is per thread */
    const int S = s->cfg.slots, MB = s->cfg.max_batch;
    srv_req **slot = calloc((size_t)S, sizeof *slot);
    int *sampled = calloc((size_t)S, sizeof *sampled); /* ids drawn per slot, eot included */
    int *seqs = calloc((size_t)MB, sizeof *seqs);
    int32_t *ids = calloc((size_t)MB + 1, sizeof *ids);
    srv_req **batch = calloc((size_t)MB + 1, sizeof *batch);
    int rr = 0; /* round-robin start for decode when more than max_batch generate */
    pthread_mutex_lock(&s->mu);
    for (;;) {
        /* drop the requests whose client went away; admit queued ones */
        int active = 0;
        for (int i = 0; i < S; i++) {
            if (slot[i] && slot[i]->cancelled) {
                s->st.cancelled++;
                gpt2c_srv_req_release_locked(s, slot[i]);
                slot[i] = NULL;
            }
            if (!slot[i] && s->queue) {
                srv_req *r = s->queue;
                s->queue = r->next;
                if (!s->queue) s->queue_tail = NULL;
                s->nqueue--;
                r->next = NULL;
                r->slot = i;
                slot[i] = r;
                sampled[i] = 0;
            }
            active += slot[i] != NULL;
        }
        s->st.queue_depth = s->nqueue;
        s->st.active = active;
        if (!active || s->paused) {
            if (s->stop && !active) break;
            pthread_cond_wait(&s->work, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);

        /* 2. one prefill chunk: the oldest request still reading its prompt */
        srv_req *pf = NULL;
        int ndone = 0; /* requests with ids to publish: batch[0..ndone) with ids */
        for (int i = 0; i < S; i++)
            if (slot[i] && slot[i]->prefilled < slot[i]->p.n_prompt && (!pf || slot[i]->id < pf->id)) pf = slot[i];
        uint64_t t0 = gpt2c_now_ns();
        int pf_tokens = 0, failed = 0;
        if (pf) {
            if (pf->prefilled == 0) {
                gpt2c_infer_reset(s->inf, pf->slot);
                if (gpt2c_sampler_create(&pf->p.sp, s->V, 1, &pf->smp) != GPT2C_OK) failed = 1;
            }
            const int left = pf->p.n_prompt - pf->prefilled;
            pf_tokens = left < s->cfg.prefill_chunk ? left : s->cfg.prefill_chunk;
            if (!failed && gpt2c_infer_prefill(s->inf, pf->slot, pf->p.prompt + pf->prefilled, pf_tokens, NULL) != GPT2C_OK)
                failed = 1;
            pf->prefilled += pf_tokens;
            if (!failed && pf->prefilled == pf->p.n_prompt) { /* the first token, from the prompt's last logits */
                pf->last = gpt2c_sampler_next(pf->smp, 0, gpt2c_infer_logits(s->inf, pf->slot));
                batch[ndone] = pf;
                ids[ndone++] = pf->last;
            }
        }
        const uint64_t t1 = gpt2c_now_ns();

        /* 3. one decode step for the generating requests (not the one whose first token was just drawn) */
        int nb = 0;
        for (int k = 0; k < S && nb < MB; k++) {
            const int i = (rr + k) % S;
            srv_req *r = slot[i];
            if (r && r->smp && r->prefilled == r->p.n_prompt && r != pf && sampled[i] > 0) {
                seqs[nb] = i;
                ids[ndone + nb] = r->last;
                batch[ndone + nb] = r;
                nb++;
            }
        }
        if (nb) {
            rr = (seqs[nb - 1] + 1) % S;
            if (gpt2c_infer_decode_some(s->inf, seqs, nb, ids + ndone, s->logits) == GPT2C_OK) {
                for (int j = 0; j < nb; j++) {
                    srv_req *r = batch[ndone + j];
                    r->last = gpt2c_sampler_next(r->smp, 0, s->logits + (size_t)j * s->Vp);
                    ids[ndone + j] = r->last;
                }
            } else {
                failed = 2;
            }
        }
        const uint64_t t2 = gpt2c_now_ns();

        /* 4. publish */
        pthread_mutex_lock(&s->mu);
        s->st.prefill_s += (double)(t1 - t0) * 1e-9;
        s->st.decode_s += (double)(t2 - t1) * 1e-9;
        s->st.prompt_tokens += (unsigned long long)pf_tokens;
        if (nb) s->st.decode_steps++;
        if (failed == 1 && pf) { /* cannot happen for a checked request: end it rather than loop */
            finish_locked(s, pf, "error");
            slot[pf->slot] = NULL;
            gpt2c_srv_req_release_locked(s, pf);
        }
        const int total = failed == 2 ? ndone : ndone + nb;
        for (int j = 0; j < total; j++) {
            srv_req *r = batch[j];
            const int i = r->slot;
            if (slot[i] != r) continue;
            if (r->cancelled || publish_locked(s, r, ++sampled[i], ids[j])) {
                if (r->cancelled && !r->done) s->st.cancelled++;
                slot[i] = NULL;
                gpt2c_srv_req_release_locked(s, r);
            }
        }
        if (failed == 2) /* a decode error: end the batch's requests */
            for (int j = ndone; j < ndone + nb; j++) {
                srv_req *r = batch[j];
                if (slot[r->slot] != r) continue;
                slot[r->slot] = NULL;
                finish_locked(s, r, "error");
                gpt2c_srv_req_release_locked(s, r);
            }
    }
    s->st.active = 0;
    pthread_mutex_unlock(&s->mu);
    free(slot);
    free(sampled);
    free(seqs);
    free(ids);
    free(batch);
    return NULL;
}
