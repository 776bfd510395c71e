/* libFuzzer target: the server's request parser on arbitrary bodies (no
 * tokenizer: text prompts are refused, token-id prompts parsed), then its text
 * pipeline on the same bytes: UTF-8 repair must give the same text however the
 * bytes are split, and stop-string cutting must give a prefix of it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef GPT2C_HAVE_SERVE
#include "serve/serve_internal.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
#ifdef GPT2C_HAVE_SERVE
    srv_params p;
    char err[512];
    const char *param = NULL;
    const int rc = gpt2c_srv_parse_completion((const char *)data, size, NULL, 50257, 1024, &p, err, sizeof err, &param);
    if (rc == 0 && (p.n_prompt < 1 || p.n_prompt + p.max_tokens > 1024)) abort();
    /* the text pipeline: whole vs split at every 7th byte */
    srv_utf8 u1 = {{0}, 0}, u2 = {{0}, 0};
    srv_buf a = {0}, b = {0};
    gpt2c_srv_utf8_feed(&u1, data, size, 1, &a);
    for (size_t i = 0; i < size; i += 7) gpt2c_srv_utf8_feed(&u2, data + i, size - i < 7 ? size - i : 7, 0, &b);
    gpt2c_srv_utf8_feed(&u2, NULL, 0, 1, &b);
    if (a.len != b.len || (a.len && memcmp(a.p, b.p, a.len) != 0)) abort();
    if (rc == 0) {
        srv_text t = {0};
        for (size_t i = 0; i < size && !t.stopped; i += 5)
            gpt2c_srv_text_add(&t, (const char *const *)p.stop, p.nstop, data + i, size - i < 5 ? size - i : 5, 0);
        gpt2c_srv_text_add(&t, (const char *const *)p.stop, p.nstop, NULL, 0, 1);
        if (t.text.len > a.len || (t.text.len && memcmp(t.text.p, a.p, t.text.len) != 0) || t.safe > t.text.len) abort();
        gpt2c_srv_buf_free(&t.text);
        gpt2c_srv_params_free(&p);
    }
    gpt2c_srv_buf_free(&a);
    gpt2c_srv_buf_free(&b);
#else
    (void)data;
    (void)size;
#endif
    return 0;
}
