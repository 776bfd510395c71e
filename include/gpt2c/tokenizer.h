/* GPT-2 byte-level BPE: load a vocabulary, encode text to ids, decode ids to
 * the exact original bytes, and learn a new vocabulary (bpe-train).
 *
 * Vocabulary files (either pair, in one directory):
 *   encoder.json + vocab.bpe      (OpenAI's release)
 *   vocab.json   + merges.txt     (Hugging Face; merges may start with "#version")
 *
 * Encoding follows GPT-2 exactly: text is cut into pieces by the pattern
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * (Unicode letters / numbers from utf8proc, \s = Unicode White_Space as in
 * Python's `regex` module and tiktoken; an invalid UTF-8 byte counts as one
 * "other" symbol), then each piece's bytes are merged by rank.
 *
 * Every output buffer is malloc'd and owned by the caller (free()).
 * Without jansson or utf8proc at build time, the functions that need them
 * return GPT2C_ERR_UNSUPPORTED with a message naming the package to install.
 * A loaded tokenizer is immutable: encode/decode may be called from many
 * threads at once. */
#ifndef GPT2C_TOKENIZER_H
#define GPT2C_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gpt2c_tokenizer gpt2c_tokenizer;

/* Loads DIR/encoder.json + DIR/vocab.bpe, or else DIR/vocab.json + DIR/merges.txt. */
gpt2c_status gpt2c_tokenizer_load(const char *dir, gpt2c_tokenizer **out);
gpt2c_status gpt2c_tokenizer_load_files(const char *vocab_json, const char *merges, gpt2c_tokenizer **out);
void gpt2c_tokenizer_free(gpt2c_tokenizer *tok);

/* Number of ids (50257 for GPT-2). */
int gpt2c_tokenizer_vocab_size(const gpt2c_tokenizer *tok);
/* Id of "<|endoftext|>", or -1 when the vocabulary has none. */
int gpt2c_tokenizer_eot(const gpt2c_tokenizer *tok);

/* Encodes n bytes (any bytes: invalid UTF-8 is fine) into *ids (malloc'd,
 * *nids entries; *ids may be NULL when *nids is 0). With allow_special,
 * "<|endoftext|>" in the text becomes the EOT id; otherwise it is plain text. */
gpt2c_status gpt2c_tokenizer_encode(const gpt2c_tokenizer *tok, const char *bytes, size_t n,
                                    int allow_special, int32_t **ids, size_t *nids);

/* The same, splitting large inputs at safe boundaries and encoding the chunks
 * on nthreads OpenMP threads (<= 0: all). The output is identical to
 * gpt2c_tokenizer_encode's for every thread count. */
gpt2c_status gpt2c_tokenizer_encode_parallel(const gpt2c_tokenizer *tok, const char *bytes, size_t n,
                                             int allow_special, int nthreads, int32_t **ids, size_t *nids);

/* Encodes a text as llm.c's dev/data scripts do (tinyshakespeare.py): the text
 * is split into sections at every "\n\n" (Python's str.split), and each section
 * becomes EOT followed by encode_ordinary(section + "\n\n"), the last section
 * without the "\n\n". Needs a vocabulary with "<|endoftext|>". nthreads as above.
 * *ndocs (may be NULL) receives the number of sections begun in this part.
 * A long text may be fed in parts cut where gpt2c_tokenizer_docs_cut says:
 * flags has GPT2C_DOCS_MORE_FOLLOWS for every part but the last (so that a
 * part's trailing "\n\n" does not open an empty section), and
 * GPT2C_DOCS_CONTINUES for a part whose start is inside a section (no EOT
 * before it); the ids then concatenate to those of the whole text. */
#define GPT2C_DOCS_MORE_FOLLOWS 1
#define GPT2C_DOCS_CONTINUES 2
gpt2c_status gpt2c_tokenizer_encode_docs(const gpt2c_tokenizer *tok, const char *bytes, size_t n, int flags,
                                         int nthreads, int32_t **ids, size_t *nids, size_t *ndocs);

/* Where to cut the first n bytes of a text (read from the start of a part)
 * so that its parts encode as the whole: the end of the last "\n\n" found
 * scanning forward as str.split does (*inside_section = 0), else the last
 * position after a '\n' that is followed by a non-space character
 * (*inside_section = 1: the next part continues the section).  0 when
 * neither exists in (0, n): read more before cutting. */
size_t gpt2c_tokenizer_docs_cut(const char *bytes, size_t n, int *inside_section);

/* Decodes ids to bytes (*bytes malloc'd and NUL-terminated; the NUL is not
 * counted in *nbytes). An id outside [0, vocab_size) is a GPT2C_ERR_RANGE. */
gpt2c_status gpt2c_tokenizer_decode(const gpt2c_tokenizer *tok, const int32_t *ids, size_t n,
                                    char **bytes, size_t *nbytes);

/* The bytes of one token, for streaming output: *p stays valid while tok lives.
 * A token may hold part of a UTF-8 character; concatenating gives the text. */
gpt2c_status gpt2c_tokenizer_token_bytes(const gpt2c_tokenizer *tok, int32_t id, const char **p, size_t *len);

/* ---- BPE trainer -------------------------------------------------------
 * Learns a byte-level BPE with GPT-2's pre-tokenization: ids 0..255 are the
 * single bytes (id = byte value), then one id per merge in order, and
 * "<|endoftext|>" last. Pair-count ties are broken by the smaller
 * (left id, right id). Deterministic. Writes DIR/vocab.json + DIR/merges.txt
 * (atomically), loadable by gpt2c_tokenizer_load. */
typedef struct gpt2c_bpe_trainer gpt2c_bpe_trainer;

typedef struct gpt2c_bpe_stats {
    size_t bytes;        /* bytes fed */
    size_t words;        /* pre-tokenized pieces fed */
    size_t unique_words; /* distinct pieces */
    int merges;          /* merges learned */
    int vocab_size;      /* ids written (merges + 257 unless duplicates) */
} gpt2c_bpe_stats;

gpt2c_status gpt2c_bpe_trainer_new(gpt2c_bpe_trainer **out);
/* Counts the pieces of a text (call once per document / file). */
gpt2c_status gpt2c_bpe_trainer_feed(gpt2c_bpe_trainer *t, const char *bytes, size_t n);
/* Learns merges until vocab_size ids (>= 257) or no pair is left; writes out_dir. */
gpt2c_status gpt2c_bpe_trainer_train(gpt2c_bpe_trainer *t, int vocab_size, const char *out_dir,
                                     gpt2c_bpe_stats *stats);
void gpt2c_bpe_trainer_free(gpt2c_bpe_trainer *t);

/* Convenience: feed every file, train, write. */
gpt2c_status gpt2c_bpe_train_files(const char *const *files, int nfiles, int vocab_size,
                                   const char *out_dir, gpt2c_bpe_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
