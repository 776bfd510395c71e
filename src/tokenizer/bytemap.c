/* GPT-2's byte <-> unicode map: printable bytes stand for themselves, the other
 * 68 bytes take the code points 256, 257, ... in byte order. */
#include <pthread.h>

#include "tokenizer/tok_internal.h"

static int printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

void gpt2c_tok_bytemap(uint32_t byte_to_cp[256]) {
    uint32_t next = 256;
    for (int b = 0; b < 256; b++) byte_to_cp[b] = printable(b) ? (uint32_t)b : next++;
}

int gpt2c_tok_cp_to_byte(uint32_t cp) {
    if (cp < 256) return printable((int)cp) ? (int)cp : -1;
    if (cp >= 256 + 68) return -1;
    uint32_t k = cp - 256; /* the k-th non-printable byte */
    for (int b = 0; b < 256; b++)
        if (!printable(b) && k-- == 0) return b;
    return -1;
}

static uint32_t map[256];
static pthread_once_t map_once = PTHREAD_ONCE_INIT;
static void init_map(void) { gpt2c_tok_bytemap(map); }

size_t gpt2c_tok_bytes_to_symbols(const uint8_t *p, size_t n, char *out) {
    pthread_once(&map_once, init_map);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = map[p[i]];
        if (cp < 0x80) {
            out[o++] = (char)cp;
        } else {
            out[o++] = (char)(0xC0 | (cp >> 6));
            out[o++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    return o;
}
