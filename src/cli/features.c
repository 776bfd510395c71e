/* The features of this build, one line each, for `gpt2c --version`.
 * To add one: write a describe function (what is built in, its version,
 * or "no (why / how to get it)") and add a line to FEATURES. */
#include "cli/features.h"

#include <omp.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "kernels/cpu/amx.h"

#ifdef GPT2C_HAVE_JANSSON
#include <jansson.h>
#endif
#ifdef GPT2C_HAVE_UTF8PROC
#include <utf8proc.h>
#endif
#ifdef GPT2C_HAVE_SERVE
#include <microhttpd.h>
#endif
#ifdef GPT2C_HAVE_MPI
#include <mpi.h>
#endif

static void isa(char *b, size_t n) {
#if defined(__x86_64__)
    const char *built = "avx512, avx2, scalar";
#else
    const char *built = "scalar";
#endif
    snprintf(b, n, "%s built; this CPU (%s) runs %s", built, gpt2c_cpu_brand(), gpt2c_isa_name(gpt2c_cpu_best_isa()));
}

/* the bf16 GEMM's AMX tiles: built (the compiler knew -mamx-tile), and whether this CPU and OS allow them */
static void amx(char *b, size_t n) {
    const char *why = "";
#if !defined(__x86_64__)
    (void)why;
    snprintf(b, n, "no (x86-64 only)");
    return;
#endif
    if (!gpt2c_cpu_amx_built()) snprintf(b, n, "no (the compiler lacks -mamx-tile)");
    else if (gpt2c_cpu_amx_usable(&why)) snprintf(b, n, "built; this CPU and OS allow it (the bf16 GEMM uses it once self-checked and faster)");
    else snprintf(b, n, "built; not here: %s", why);
}

static void openmp(char *b, size_t n) { snprintf(b, n, "yes (OpenMP %d, %d threads by default)", _OPENMP, omp_get_max_threads()); }

static void blas(char *b, size_t n) {
#ifdef GPT2C_HAVE_BLAS
    snprintf(b, n, "yes (--backend blas): %s", gpt2c_blas_describe());
#else
    snprintf(b, n, "no (install libopenblas-dev and rebuild for --backend blas)");
#endif
}

static void cuda(char *b, size_t n) {
#ifdef GPT2C_HAVE_CUDA
    snprintf(b, n, "yes (--backend cuda; the device is checked when selected)");
#else
    snprintf(b, n, "no (build with the CUDA toolkit for --backend cuda)");
#endif
}

static void mpi(char *b, size_t n) {
#ifdef GPT2C_HAVE_MPI
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
#if defined(GPT2C_HAVE_NCCL)
    const char *dev = "; --backend cuda reduces on the device with NCCL";
#elif defined(GPT2C_HAVE_CUDA)
    const char *dev = "; host backends only: NCCL not found";
#else
    const char *dev = "";
#endif
    snprintf(b, n, "yes (MPI %d.%d: data-parallel training under mpirun%s)", major, minor, dev);
#else
    snprintf(b, n, "no (install libopenmpi-dev and rebuild for data-parallel training)");
#endif
}

static void json(char *b, size_t n) {
#ifdef GPT2C_HAVE_JANSSON
    snprintf(b, n, "yes (jansson %s: safetensors, config.json, vocabularies)", jansson_version_str());
#else
    snprintf(b, n, "no (install libjansson-dev: safetensors, Hugging Face directories and vocabularies need it)");
#endif
}

static void unicode(char *b, size_t n) {
#ifdef GPT2C_HAVE_UTF8PROC
    snprintf(b, n, "yes (utf8proc %s: the tokenizer's Unicode classes)", utf8proc_version());
#else
    snprintf(b, n, "no (install libutf8proc-dev: encoding text needs it)");
#endif
}

static void http(char *b, size_t n) {
#ifdef GPT2C_HAVE_SERVE
    snprintf(b, n, "yes (libmicrohttpd %s: gpt2c serve)", MHD_get_version());
#else
    snprintf(b, n, "no (install libmicrohttpd-dev and rebuild for gpt2c serve)");
#endif
}

static const struct {
    const char *name;
    void (*describe)(char *buf, size_t n);
} FEATURES[] = {
    {"SIMD paths", isa}, {"AMX", amx}, {"OpenMP", openmp}, {"BLAS", blas},     {"CUDA", cuda},
    {"MPI", mpi},        {"JSON", json},     {"utf8proc", unicode}, {"HTTP", http},
};

void cli_print_version(FILE *f) {
    fprintf(f, "gpt2c %s (%s)\n", GPT2C_VERSION, GPT2C_BUILD_INFO);
    char buf[512];
    for (size_t i = 0; i < sizeof FEATURES / sizeof FEATURES[0]; i++) {
        FEATURES[i].describe(buf, sizeof buf);
        fprintf(f, "  %-11s %s\n", FEATURES[i].name, buf);
    }
}
