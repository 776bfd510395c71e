/* Knowledge distillation: a student trains on a teacher's soft labels.
 *
 *   loss = alpha * tau^2 * KL(softmax(t / tau) || softmax(s / tau)) + (1 - alpha) * CE(s, target)
 *
 * per position (s, t: the student's and the teacher's logits over the V real
 * ids), averaged over the batch's positions.  The tau^2 keeps the soft term's
 * gradient on the scale of the hard one's (Hinton et al., 2015).
 *
 * The teacher runs forward only, through the inference path (src/infer: a KV
 * cache, no gradients, no stored activations), one sequence at a time in
 * chunks of positions: at most `chunk` rows of its logits exist at once,
 * never the whole batch times the vocabulary.
 *
 *   gpt2c_distill *d;  gpt2c_distill_create(teacher, &student->cfg, T, &cfg, &d);
 *   train_cfg.loss = gpt2c_distill_loss(d);   // then gpt2c_train as usual
 */
#ifndef GPT2C_DISTILL_H
#define GPT2C_DISTILL_H

#include "gpt2c/model.h"

typedef struct gpt2c_distill_cfg {
    float temperature; /* tau > 0 */
    float alpha;       /* in [0, 1]: weight of the soft (teacher) term; 0 = plain cross-entropy */
    int chunk;         /* teacher positions per forward (rows of teacher logits held); <= 0: 64 */
} gpt2c_distill_cfg;

typedef struct gpt2c_distill gpt2c_distill;

/* One-line error naming the quantity (temperature, alpha) when out of range. */
gpt2c_status gpt2c_distill_check(const gpt2c_distill_cfg *c);

/* Plans the teacher's inference state for sequences of up to T positions.
 * Fails when the teacher's vocabulary differs from the student's or its
 * context is shorter than T.  The teacher must outlive d; it computes with
 * its own thread count (gpt2c_model_set_threads). */
gpt2c_status gpt2c_distill_create(const gpt2c_model *teacher, const gpt2c_config *student, int T,
                                  const gpt2c_distill_cfg *c, gpt2c_distill **out);
void gpt2c_distill_free(gpt2c_distill *d);

/* The loss to train with: gpt2c_train_cfg.loss or gpt2c_batch_source.loss. */
const gpt2c_loss *gpt2c_distill_loss(gpt2c_distill *d);

/* Bytes the teacher's forward holds (KV cache, buffers, a chunk of logits and one of scratch). */
size_t gpt2c_distill_bytes(const gpt2c_distill *d);

/* Sums over the positions seen since the last call (then reset): the mean
 * soft term KL and the mean hard term CE, for logs. */
void gpt2c_distill_take_terms(gpt2c_distill *d, double *kl, double *ce);

/* One position's loss (the math, exposed for tests).  row: the student's
 * logits (V), replaced by g + onehot(target) where g = dloss/dlogits
 * (gpt2c_loss's contract); t_row: the teacher's logits (V), overwritten;
 * scratch: V floats.  kl, ce (may be NULL): the two terms, unweighted. */
float gpt2c_distill_row(float *row, float *t_row, float *scratch, int target, int V, float tau, float alpha,
                        double *kl, double *ce);

#endif
