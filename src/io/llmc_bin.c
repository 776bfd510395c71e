/* llm.c model checkpoints (.bin): a header of 256 int32 -- magic 20240326,
 * version (3: fp32 params, 5: bf16 params), maxT, V, L, NH, C, Vp -- then the
 * 16 parameter tensors back to back in slab order (wte is (Vp, C), weights are
 * (out, in), each kind stacked over layers).  Our slab pads every tensor's
 * start to 16 floats, so data moves tensor by tensor. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/fileio.h"
#include "gpt2c/io.h"
#include "io/io_internal.h"
#include "model/model_internal.h"

#define LLMC_MAGIC 20240326
#define LLMC_HEADER_INTS 256

gpt2c_status gpt2c_llmc_header(const char *path, int32_t hdr[8], size_t *file_size) {
    FILE *f;
    GPT2C_TRY(gpt2c_open_regular(path, &f, file_size));
    int32_t h[LLMC_HEADER_INTS] = {0};
    size_t got = fread(h, 1, sizeof h, f);
    fclose(f);
    if (got >= 4 && h[0] != LLMC_MAGIC)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: bad magic %d: not an llm.c model checkpoint (expected %d)", path, h[0],
                          LLMC_MAGIC);
    if (got < sizeof h)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: truncated llm.c header (%zu bytes, need %zu)", path, got, sizeof h);
    if (h[1] != 3 && h[1] != 5)
        return gpt2c_fail(GPT2C_ERR_UNSUPPORTED, "%s: llm.c checkpoint version %d is not supported (3 = fp32, 5 = bf16)",
                          path, h[1]);
    memcpy(hdr, h, 8 * sizeof(int32_t));
    return GPT2C_OK;
}

uint64_t gpt2c_io_param_count(const gpt2c_config *c) {
    const uint64_t C = (uint64_t)c->channels, L = (uint64_t)c->num_layers;
    /* wte + wpe + per layer (ln1 2C, qkv 3C*C+3C, attproj C*C+C, ln2 2C, fc 4C*C+4C, fcproj 4C*C+C) + ln_f 2C */
    return (uint64_t)c->padded_vocab_size * C + (uint64_t)c->max_seq_len * C + L * (12 * C * C + 13 * C) + 2 * C;
}

gpt2c_status gpt2c_io_load_llmc(const char *path, gpt2c_model **out) {
    *out = NULL;
    int32_t h[8];
    size_t size;
    GPT2C_TRY(gpt2c_llmc_header(path, h, &size));
    gpt2c_config cfg = {.max_seq_len = h[2], .vocab_size = h[3], .num_layers = h[4], .num_heads = h[5],
                        .channels = h[6], .padded_vocab_size = h[7]};
    if (gpt2c_config_check(&cfg, path) != GPT2C_OK) return GPT2C_ERR_FORMAT; /* message names the file */
    const int bf16 = h[1] == 5;
    const uint64_t want = LLMC_HEADER_INTS * 4 + gpt2c_io_param_count(&cfg) * (bf16 ? 2 : 4);
    if ((uint64_t)size != want)
        return gpt2c_fail(GPT2C_ERR_FORMAT, "%s: %s: file has %zu bytes but its header (L=%d C=%d Vp=%d T=%d, %s) needs %llu",
                          path, (uint64_t)size < want ? "truncated" : "trailing bytes", size, cfg.num_layers,
                          cfg.channels, cfg.padded_vocab_size, cfg.max_seq_len, bf16 ? "bf16" : "fp32",
                          (unsigned long long)want);
    gpt2c_model *m;
    gpt2c_status cst = gpt2c_model_create(&cfg, &m);
    if (cst != GPT2C_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", gpt2c_errmsg());
        return gpt2c_fail(cst, "%s: %s", path, why);
    }
    FILE *f = fopen(path, "rb");
    gpt2c_status st = GPT2C_OK;
    uint16_t *buf = bf16 ? malloc(65536 * sizeof *buf) : NULL;
    if (!f)
        st = gpt2c_fail(GPT2C_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    else if (bf16 && !buf)
        st = gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
    else if (fseek(f, LLMC_HEADER_INTS * 4, SEEK_SET) != 0)
        st = gpt2c_fail(GPT2C_ERR_IO, "%s: seek failed: %s", path, strerror(errno));
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS && st == GPT2C_OK; id++) {
        float *dst = m->params.t[id];
        size_t n = m->info[id].numel;
        if (!bf16) {
            if (fread(dst, sizeof(float), n, f) != n)
                st = gpt2c_fail(GPT2C_ERR_IO, "%s: read failed in tensor %s", path, m->info[id].name);
            continue;
        }
        for (size_t i = 0; i < n && st == GPT2C_OK; i += 65536) {
            size_t k = n - i < 65536 ? n - i : 65536;
            if (fread(buf, 2, k, f) != k)
                st = gpt2c_fail(GPT2C_ERR_IO, "%s: read failed in tensor %s", path, m->info[id].name);
            else
                gpt2c_dtype_to_f32(GPT2C_DT_BF16, buf, dst + i, k);
        }
    }
    if (f) fclose(f);
    free(buf);
    if (st != GPT2C_OK) {
        gpt2c_model_free(m);
        return st;
    }
    *out = m;
    return GPT2C_OK;
}

gpt2c_status gpt2c_model_save_llmc(const gpt2c_model *m, const char *path, int version) {
    if (version != 3 && version != 5)
        return gpt2c_fail(GPT2C_ERR_ARG, "%s: llm.c version must be 3 (fp32) or 5 (bf16), not %d", path, version);
    const gpt2c_config *c = &m->cfg;
    int32_t h[LLMC_HEADER_INTS] = {LLMC_MAGIC, version, c->max_seq_len, c->vocab_size, c->num_layers,
                                   c->num_heads, c->channels, c->padded_vocab_size};
    uint16_t *buf = version == 5 ? malloc(65536 * sizeof *buf) : NULL;
    if (version == 5 && !buf) return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
    gpt2c_atomic a;
    const float *P = NULL; /* host view of the parameters (a copy when on a GPU) */
    gpt2c_status st = gpt2c_model_slab_to_host(m, m->params_mem, &P);
    if (st != GPT2C_OK) {
        free(buf);
        return st;
    }
    st = gpt2c_atomic_open(&a, path);
    if (st == GPT2C_OK) st = gpt2c_atomic_write(&a, h, sizeof h);
    for (int id = 0; id < GPT2C_NUM_PARAM_TENSORS && st == GPT2C_OK; id++) {
        const float *src = gpt2c_param_slice(m, (float *)P, id, 0);
        size_t n = m->info[id].numel;
        if (version == 3) {
            st = gpt2c_atomic_write(&a, src, n * sizeof(float));
            continue;
        }
        for (size_t i = 0; i < n && st == GPT2C_OK; i += 65536) {
            size_t k = n - i < 65536 ? n - i : 65536;
            for (size_t j = 0; j < k; j++) buf[j] = gpt2c_f32_to_bf16(src[i + j]);
            st = gpt2c_atomic_write(&a, buf, k * 2);
        }
    }
    if (st == GPT2C_OK) st = gpt2c_atomic_commit(&a);
    free(buf);
    gpt2c_model_slab_host_free(m->params_mem, P);
    return st;
}
