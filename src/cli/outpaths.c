#include "cli/outpaths.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"

static int same_inode(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Splits path into its folder (stat'ed into *dir) and its last component. */
static int folder_of(const char *path, struct stat *dir, const char **base) {
    const char *slash = strrchr(path, '/');
    char d[PATH_MAX];
    if (!slash) snprintf(d, sizeof d, ".");
    else if (slash == path) snprintf(d, sizeof d, "/");
    else snprintf(d, sizeof d, "%.*s", (int)(slash - path), path);
    *base = slash ? slash + 1 : path;
    return stat(d, dir) == 0;
}

typedef struct {
    const char *cmd, *opt, *out; /* the output being checked */
    int have_out;
    struct stat out_st;      /* the output file, when it exists */
    int have_dir;
    struct stat dir_st;      /* the output's folder */
    cli_name_match match;    /* names written into dir_st */
    const void *user;
} check_ctx;

/* same: the output is that very file (else: a file the output folder would receive). */
static int refuse(const check_ctx *c, const cli_path *in, const char *file, int same) {
    const char *what = strcmp(file, in->path) == 0 ? "the input given to" : "an input of";
    if (same && strcmp(file, c->out) == 0)
        cli_error(c->cmd, "%s: %s is %s %s: refusing to overwrite it", c->opt, c->out, what, in->opt);
    else if (same)
        cli_error(c->cmd, "%s: %s is the same file as %s, %s %s: refusing to overwrite it", c->opt, c->out, file, what,
                  in->opt);
    else
        cli_error(c->cmd, "%s: writing to %s would overwrite %s, %s %s: refusing", c->opt, c->out, file, what, in->opt);
    return 2;
}

/* Checks one existing input file against the output. */
static int check_file(const check_ctx *c, const cli_path *in, const char *file) {
    struct stat st;
    if (stat(file, &st) != 0) return 0; /* absent: nothing to destroy (the command reports it) */
    if (c->have_out && same_inode(&st, &c->out_st)) return refuse(c, in, file, 1);
    if (!c->have_dir) return 0;
    /* the input as named, and where it really is (it may be a link) */
    char real[PATH_MAX];
    const char *names[2] = {file, realpath(file, real) ? real : NULL};
    for (int k = 0; k < 2; k++) {
        struct stat d;
        const char *base;
        if (names[k] && folder_of(names[k], &d, &base) && same_inode(&d, &c->dir_st) && c->match(base, c->user))
            return refuse(c, in, file, 0);
    }
    return 0;
}

static int check_input(const check_ctx *c, const cli_path *in) {
    if (!in->path) return 0;
    struct stat st;
    if (stat(in->path, &st) == 0) {
        if (!S_ISDIR(st.st_mode)) return check_file(c, in, in->path);
        if (c->have_out && same_inode(&st, &c->out_st)) return refuse(c, in, in->path, 1);
        /* a folder input (tokenizer, Hugging Face model): every file in it */
        DIR *d = opendir(in->path);
        if (!d) return 0;
        char p[PATH_MAX];
        int rc = 0;
        struct dirent *e;
        while (!rc && (e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            snprintf(p, sizeof p, "%s/%s", in->path, e->d_name);
            rc = check_file(c, in, p);
        }
        closedir(d);
        return rc;
    }
    /* not a file: perhaps a glob pattern of shards */
    glob_t g;
    if (glob(in->path, 0, NULL, &g) != 0) return 0;
    int rc = 0;
    for (size_t i = 0; i < g.gl_pathc && !rc; i++) rc = check_file(c, in, g.gl_pathv[i]);
    globfree(&g);
    return rc;
}

static int check_all(check_ctx *c, const cli_path *ins, int nin) {
    for (int i = 0; i < nin; i++) {
        int rc = check_input(c, &ins[i]);
        if (rc) return rc;
    }
    return 0;
}

static int same_name(const char *base, const void *user) { return strcmp(base, (const char *)user) == 0; }

int cli_check_output_file(const char *cmd, const char *opt, const char *out, const cli_path *ins, int nin) {
    check_ctx c = {.cmd = cmd, .opt = opt, .out = out};
    c.have_out = stat(out, &c.out_st) == 0;
    if (c.have_out && S_ISDIR(c.out_st.st_mode))
        return cli_error(cmd, "%s: %s is a directory (give a file name in it)", opt, out), 2;
    const char *base;
    c.have_dir = folder_of(out, &c.dir_st, &base);
    c.match = same_name;
    c.user = base;
    return check_all(&c, ins, nin);
}

int cli_check_output_names(const char *cmd, const char *opt, const char *dir, cli_name_match match, const void *user,
                           const cli_path *ins, int nin) {
    check_ctx c = {.cmd = cmd, .opt = opt, .out = dir, .match = match, .user = user};
    c.have_dir = stat(dir, &c.dir_st) == 0;
    if (!c.have_dir) return 0; /* a folder still to be created holds no input */
    if (!S_ISDIR(c.dir_st.st_mode)) {
        /* the folder is a file: an input? (else creating the folder fails later) */
        c.have_out = 1;
        c.out_st = c.dir_st;
        c.have_dir = 0;
    }
    return check_all(&c, ins, nin);
}

int cli_hf_dir_output_name(const char *base, const void *user) {
    (void)user;
    static const char *const names[] = {"model.safetensors", "model.safetensors.index.json", "config.json",
                                        "generation_config.json", "vocab.json", "merges.txt"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(base, names[i]) == 0) return 1;
    size_t n = strlen(base);
    return strncmp(base, "model-", 6) == 0 && n > 12 && strcmp(base + n - 12, ".safetensors") == 0;
}

int cli_profile_output_name(const char *base, const void *user) {
    (void)user;
    static const char *const ext[] = {".json", ".csv", ".txt", ".html", ".svg"};
    size_t n = strlen(base);
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t k = strlen(ext[i]);
        if (n >= k && strcmp(base + n - k, ext[i]) == 0) return 1;
    }
    return 0;
}
