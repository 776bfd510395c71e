/* A small hostile checkpoint must be refused before anything large is
 * allocated (issue 20: a 1.3 KB safetensors file claiming a huge padded
 * vocabulary or 4096 layers got gigabytes allocated and zeroed first).  Each
 * load runs in a child process; its peak RSS (getrusage ru_maxrss) must stay
 * under 100 MB, and the error must name the file. */
#include <stdint.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io_testutil.h"

#define RSS_LIMIT_KB (100L * 1024)

/* wte [V, C], wpe [T, C] of real (zero) F16 data; optional extra empty tensor and metadata. */
static void write_hostile(const char *path, int V, int C, int T, const char *empty_name, const char *key,
                          const char *value) {
    static uint16_t zeros[4096];
    gpt2c_st_writer *w;
    CHECK_OK(gpt2c_st_writer_new(&w));
    int64_t wte[2] = {V, C}, wpe[2] = {T, C}, none[1] = {0};
    CHECK_OK(gpt2c_st_writer_add(w, "wte.weight", GPT2C_DT_F16, 2, wte, zeros));
    CHECK_OK(gpt2c_st_writer_add(w, "wpe.weight", GPT2C_DT_F16, 2, wpe, zeros));
    if (empty_name) CHECK_OK(gpt2c_st_writer_add(w, empty_name, GPT2C_DT_F16, 1, none, zeros));
    CHECK_OK(gpt2c_st_writer_meta(w, "n_head", "1"));
    if (key) CHECK_OK(gpt2c_st_writer_meta(w, key, value));
    CHECK_OK(gpt2c_st_writer_write(w, path));
    gpt2c_st_writer_free(w);
}

/* Loads in a child: returns its peak RSS in KiB; *refused = the load failed naming the file. */
static long load_in_child(const char *path, int *refused) {
    int fds[2];
    fflush(stdout);
    if (pipe(fds) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        gpt2c_model *m = NULL;
        gpt2c_status st = gpt2c_model_load(path, &m);
        char ok = st != GPT2C_OK && strstr(gpt2c_errmsg(), path) != NULL;
        if (st != GPT2C_OK) printf("  refused: %s\n", gpt2c_errmsg());
        fflush(stdout);
        if (write(fds[1], &ok, 1) != 1) _exit(3);
        gpt2c_model_free(m);
        _exit(0);
    }
    close(fds[1]);
    char ok = 0;
    if (read(fds[0], &ok, 1) != 1) ok = 0;
    close(fds[0]);
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) return -1;
    *refused = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return ru.ru_maxrss; /* KiB on Linux */
}

static void expect_cheap_refusal(const char *what, const char *path) {
    size_t n;
    unsigned char *b = io_slurp(path, &n);
    free(b);
    int refused = 0;
    long rss = load_in_child(path, &refused);
    printf("%s: %zu-byte file, child peak RSS %ld KiB\n", what, n, rss);
    CHECK_MSG(refused, "%s: not refused (or the message does not name the file)", what);
    CHECK_MSG(rss > 0 && rss < RSS_LIMIT_KB, "%s: peak RSS %ld KiB while refusing a %zu-byte file", what, rss, n);
}

int main(void) {
#ifndef GPT2C_HAVE_JANSSON
    tu_skip("built without jansson: no safetensors");
#endif
    const char *dir = io_scratch("hostile");
    char *p = io_path(dir, "hostile.safetensors");
    /* 4096 layers claimed by one empty tensor's name */
    write_hostile(p, 4, 1024, 1, "h.4095.ln_1.weight", NULL, NULL);
    expect_cheap_refusal("4096 layers", p);
    /* a padded vocabulary of 2^31 - 1 rows */
    write_hostile(p, 4, 64, 4, "h.0.ln_1.weight", "padded_vocab_size", "2147483647");
    expect_cheap_refusal("huge padded vocab", p);
    /* a long context claimed with no wpe data behind it is impossible (shape = data), but a
     * wide model whose layers are missing must still be refused before the allocation */
    write_hostile(p, 1, 2048, 1, "h.63.mlp.c_fc.weight", NULL, NULL);
    expect_cheap_refusal("64 wide layers without their tensors", p);
    io_rm_rf(dir);
    return tu_finish("test_harden_memory");
}
