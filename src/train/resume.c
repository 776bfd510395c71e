#include "gpt2c/resume.h"

#include <limits.h>
#include <string.h>

#include "gpt2c/parse.h"

static gpt2c_status bad(const gpt2c_st_file *f, const char *key, const char *val, const char *want) {
    return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: __metadata__ %s '%.40s' is not %s", gpt2c_st_path(f), key, val, want);
}

gpt2c_status gpt2c_resume_read(const gpt2c_st_file *f, gpt2c_resume_state *rs) {
    memset(rs, 0, sizeof *rs);
    const char *s = gpt2c_st_meta(f, "gpt2c.step"), *e = gpt2c_st_meta(f, "gpt2c.data.epoch"),
               *sh = gpt2c_st_meta(f, "gpt2c.data.shard"), *c = gpt2c_st_meta(f, "gpt2c.data.cursor");
    if (!s || !e || !sh || !c)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: not a training checkpoint (no gpt2c.step / gpt2c.data.* metadata)",
                          gpt2c_st_path(f));
    if (!gpt2c_parse_int(s, 0, INT_MAX, &rs->step)) return bad(f, "gpt2c.step", s, "a step count in [0, 2^31)");
    if (!gpt2c_parse_u64(e, GPT2C_RESUME_MAX_EPOCH, &rs->pos.epoch))
        return bad(f, "gpt2c.data.epoch", e, "an epoch count in [0, 2^40]");
    if (!gpt2c_parse_int(sh, 0, INT_MAX, &rs->pos.shard)) return bad(f, "gpt2c.data.shard", sh, "a shard index");
    /* a token offset or a row count inside one shard: shards hold < 2^31 tokens */
    if (!gpt2c_parse_u64(c, INT32_MAX, &rs->pos.cursor)) return bad(f, "gpt2c.data.cursor", c, "a position in a shard");
    /* every epoch takes at least one batch, every step at least one batch: no
     * more epochs than batches (accumulation is at most 2^20 micro-batches) */
    if (rs->pos.epoch > ((uint64_t)rs->step << 20))
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: __metadata__ gpt2c.data.epoch %llu is impossible after %d steps",
                          gpt2c_st_path(f), (unsigned long long)rs->pos.epoch, rs->step);
    const char *sd = gpt2c_st_meta(f, "gpt2c.seed"), *sf = gpt2c_st_meta(f, "gpt2c.data.shuffle");
    if (sd) {
        int64_t v;
        if (!gpt2c_parse_i64(sd, 0, INT64_MAX, &v)) return bad(f, "gpt2c.seed", sd, "a seed in [0, 2^63)");
        rs->seed = (uint64_t)v;
        rs->has_seed = 1;
    }
    if (sf) {
        if (!gpt2c_parse_int(sf, 0, 1, &rs->shuffle)) return bad(f, "gpt2c.data.shuffle", sf, "0 or 1");
        rs->has_shuffle = 1;
    }
    return GPT2C_OK;
}
