#include "gpt2c/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

gpt2c_status gpt2c_open_regular(const char *path, FILE **out, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return gpt2c_fail(GPT2C_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return gpt2c_fail(GPT2C_ERR_IO, "%s: not a regular file", path);
    }
    *out = f;
    *size = (size_t)sb.st_size;
    return GPT2C_OK;
}

gpt2c_status gpt2c_read_file(const char *path, void **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *f;
    size_t n;
    GPT2C_TRY(gpt2c_open_regular(path, &f, &n));
    char *buf = malloc(n + 1);
    if (!buf) {
        fclose(f);
        return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: cannot allocate %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    int err = ferror(f);
    fclose(f);
    if (got != n || err) {
        free(buf);
        return gpt2c_fail(GPT2C_ERR_IO, "%s: read failed (%zu of %zu bytes)", path, got, n);
    }
    buf[n] = 0;
    *data = buf;
    *size = n;
    return GPT2C_OK;
}

gpt2c_status gpt2c_atomic_open(gpt2c_atomic *a, const char *path) {
    memset(a, 0, sizeof *a);
    a->fail_after = -1;
    const char *fault = getenv("GPT2C_FAULT_WRITE_AFTER");
    if (fault && *fault) a->fail_after = atoll(fault);
    size_t len = strlen(path);
    a->path = malloc(len + 1);
    a->tmp = malloc(len + 32);
    if (!a->path || !a->tmp) {
        free(a->path);
        free(a->tmp);
        a->path = a->tmp = NULL;
        return gpt2c_fail(GPT2C_ERR_NOMEM, "%s: out of memory", path);
    }
    memcpy(a->path, path, len + 1);
    snprintf(a->tmp, len + 32, "%s.tmp.%ld", path, (long)getpid());
    a->f = fopen(a->tmp, "wb");
    if (!a->f) {
        gpt2c_status st = gpt2c_fail(GPT2C_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
        free(a->path);
        free(a->tmp);
        a->path = a->tmp = NULL;
        return st;
    }
    return GPT2C_OK;
}

gpt2c_status gpt2c_atomic_write(gpt2c_atomic *a, const void *p, size_t n) {
    if (!a->f) return gpt2c_fail(GPT2C_ERR_IO, "%s: write after failure", a->path ? a->path : "?");
    if (a->fail_after >= 0 && a->written + n > (size_t)a->fail_after) {
        gpt2c_status st = gpt2c_fail(GPT2C_ERR_IO, "%s: write failed after %zu bytes: No space left on device (simulated)",
                                     a->path, a->written);
        gpt2c_atomic_abort(a);
        return st;
    }
    if (n && fwrite(p, 1, n, a->f) != n) {
        gpt2c_status st = gpt2c_fail(GPT2C_ERR_IO, "%s: write failed: %s", a->path, strerror(errno));
        gpt2c_atomic_abort(a);
        return st;
    }
    a->written += n;
    return GPT2C_OK;
}

/* Is "<base>.tmp.<pid>" a temporary of a writer that no longer runs? */
static int stale_temporary(const char *name, const char *base, size_t nbase) {
    if (strncmp(name, base, nbase) != 0 || strncmp(name + nbase, ".tmp.", 5) != 0) return 0;
    const char *digits = name + nbase + 5;
    if (!*digits || strlen(digits) > 9) return 0;
    for (const char *p = digits; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    const long pid = strtol(digits, NULL, 10);
    if (pid <= 0 || pid == (long)getpid()) return 0;
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH; /* a live (or foreign) writer keeps its file */
}

/* After the rename: fsync the folder so the new name survives a crash, and
 * remove the temporaries that killed writers of the same file left behind. */
static gpt2c_status finish_in_folder(const char *path) {
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    char dir[4096];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        int bad = fsync(fd) != 0 && errno == EIO; /* EINVAL: a file system without directory fsync */
        close(fd);
        if (bad) return gpt2c_fail(GPT2C_ERR_IO, "%s: cannot make the rename durable: fsync of %s failed", path, dir);
    }
    DIR *d = opendir(dir);
    if (!d) return GPT2C_OK;
    const size_t nbase = strlen(base);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (stale_temporary(e->d_name, base, nbase)) unlinkat(dirfd(d), e->d_name, 0);
    closedir(d);
    return GPT2C_OK;
}

gpt2c_status gpt2c_atomic_commit(gpt2c_atomic *a) {
    if (!a->f) return gpt2c_fail(GPT2C_ERR_IO, "%s: commit after failure", a->path ? a->path : "?");
    int bad = fflush(a->f) != 0 || fsync(fileno(a->f)) != 0;
    int e = errno;
    bad |= fclose(a->f) != 0;
    a->f = NULL;
    if (bad || rename(a->tmp, a->path) != 0) {
        if (!bad) e = errno;
        gpt2c_status st = gpt2c_fail(GPT2C_ERR_IO, "%s: cannot finish writing: %s", a->path, strerror(e));
        gpt2c_atomic_abort(a);
        return st;
    }
    gpt2c_status st = finish_in_folder(a->path);
    free(a->path);
    free(a->tmp);
    a->path = a->tmp = NULL;
    return st;
}

void gpt2c_atomic_abort(gpt2c_atomic *a) {
    if (a->f) fclose(a->f);
    a->f = NULL;
    if (a->tmp) unlink(a->tmp);
    free(a->path);
    free(a->tmp);
    a->path = a->tmp = NULL;
}
