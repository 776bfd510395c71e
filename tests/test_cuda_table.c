/* Host-side checks of the cuda backend that need no GPU: the table is
 * complete (a device backend never inherits ref), and selecting it without a
 * device fails with one clean line instead of crashing.  With a device, the
 * selection must simply succeed (test_cuda_ops then does the real work). */
#include <stddef.h>

#include "kernels/kernels.h"
#include "testutil.h"

int main(void) {
    const gpt2c_kernels *raw = gpt2c_kernels_cuda();
    const gpt2c_kernels *k = NULL;
    gpt2c_status st = gpt2c_kernels_get("cuda", &k);
    const char *msg = gpt2c_errmsg();
    if (!raw) { /* built without CUDA: the registry says so */
        CHECK(st == GPT2C_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(msg, "built without CUDA") != NULL, "%s", msg);
        printf("  built without CUDA: %s\n", msg);
        return tu_finish("test_cuda_table");
    }
    CHECK(strcmp(raw->name, "cuda") == 0);
    CHECK_MSG(gpt2c_kernels_first_null(raw) == -1, "entry #%ld is NULL: fill it in src/kernels/cuda/cuda_backend.c",
              gpt2c_kernels_first_null(raw));
    CHECK(raw->dev_alloc && raw->dev_free && raw->memcpy_h2d && raw->memcpy_d2h && raw->device_check &&
          raw->device_init);
    /* ref and cpu stay host backends (their [cuda] entries stay NULL) */
    const gpt2c_kernels *cpu = NULL;
    CHECK_OK(gpt2c_kernels_get("cpu", &cpu));
    CHECK(cpu && cpu->dev_alloc == NULL && gpt2c_kernels_ref()->dev_alloc == NULL);
    /* a device table with a hole is refused by name of the entry index */
    gpt2c_kernels holey = *raw;
    holey.gelu_backward = NULL;
    CHECK(gpt2c_kernels_first_null(&holey) >= 0);

    if (st == GPT2C_OK) {
        CHECK(k == raw);
        printf("  CUDA device present: selection works\n");
    } else {
        printf("  %s\n", msg);
        CHECK(st == GPT2C_ERR_UNSUPPORTED);
        CHECK_MSG(strncmp(msg, "backend 'cuda': ", 16) == 0, "%s", msg);
        CHECK_MSG(strchr(msg, '\n') == NULL, "message is not one line: %s", msg);
        /* second try: still a clean failure, nothing half-initialised */
        CHECK(gpt2c_kernels_get("cuda", &k) == GPT2C_ERR_UNSUPPORTED);
    }
    return tu_finish("test_cuda_table");
}
