/* libFuzzer target: resume metadata (a safetensors header from memory) and the
 * data loader it positions: a position that parses must either be refused by
 * the loader or give batches read inside the shard, with ids < vocab. */
#include <stdint.h>

#include "fuzz_util.h"
#include "gpt2c/data.h"
#include "gpt2c/resume.h"
#include "gpt2c/shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { B = 2, T = 4, V = 50 };

static const char *shards(void) {
    static int done;
    if (!done) {
        uint16_t tok[97];
        for (int i = 0; i < 97; i++) tok[i] = (uint16_t)(i * 7 % V);
        if (gpt2c_shard_write(fuzz_path("d_000.bin"), tok, 97) != GPT2C_OK) abort();
        if (gpt2c_shard_write(fuzz_path("d_001.bin"), tok, 41) != GPT2C_OK) abort();
        done = 1;
    }
    return fuzz_path("d_*.bin");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gpt2c_st_file *f = NULL;
    if (gpt2c_st_parse("fuzz.safetensors", data, size, &f) != GPT2C_OK) return 0;
    gpt2c_resume_state rs;
    gpt2c_status st = gpt2c_resume_read(f, &rs);
    gpt2c_st_close(f);
    if (st != GPT2C_OK) return 0;
    gpt2c_dataloader dl;
    if (gpt2c_dataloader_open(&dl, shards(), B, T, rs.has_shuffle && rs.shuffle, rs.seed, V) != GPT2C_OK) abort();
    if (gpt2c_dataloader_seek(&dl, rs.pos) == GPT2C_OK)
        for (int k = 0; k < 5; k++) {
            if (gpt2c_dataloader_next(&dl) != GPT2C_OK) abort();
            for (int i = 0; i < B * T; i++)
                if (dl.inputs[i] < 0 || dl.inputs[i] >= V || dl.targets[i] < 0 || dl.targets[i] >= V) abort();
        }
    gpt2c_dataloader_close(&dl);
    return 0;
}
