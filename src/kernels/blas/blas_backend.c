/* The blas backend: the cpu backend with its three GEMMs done by cblas_sgemm
 * (OpenBLAS, BLIS, ...), so `--backend blas` vs `--backend cpu` compares
 * exactly the GEMMs.
 *
 * The library is loaded with dlopen when the backend is first selected, not
 * linked: OpenBLAS starts a thread pool and reads OPENBLAS_CORETYPE in a
 * load-time constructor, and merely having it loaded with the wrong core type
 * (this machine's environment presets Haswell on an AVX-512 CPU) was measured
 * to slow our own 2-thread OpenMP kernels 5x.  Loading late lets us correct
 * the core type first (and say so) and keeps runs that never use BLAS free
 * of it.  Determinism across thread counts is what the BLAS library gives. */
#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt2c/cpu.h"
#include "kernels/blas/blas.h"
#include "kernels/cpu/cpu_ops.h"
#include "kernels/backends.h"

typedef void (*sgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE, int, int, int, float,
                         const float *, int, const float *, int, float, float *, int);
typedef void (*set_threads_fn)(int);
typedef char *(*get_str_fn)(void);

static struct {
    int tried;
    void *handle;
    sgemm_fn sgemm;
    set_threads_fn set_threads; /* OpenBLAS only */
    get_str_fn config, corename;
    char why[512];  /* why loading failed */
    char note[256]; /* core-type correction, if any */
    char path[256];
} lib;

/* OPENBLAS_CORETYPE values whose sgemm has no AVX-512 kernel */
static int coretype_lacks_avx512(const char *c) {
    static const char *const ok[] = {"skylakex", "cooperlake", "sapphirerapids"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (strcasecmp(c, ok[i]) == 0) return 0;
    return 1;
}

/* OpenBLAS cores without AVX2 kernels: what its detection falls to on a CPU
 * it does not know (Prescott: SSE3), or older classes */
static int coretype_generic(const char *c) {
    static const char *const generic[] = {"prescott", "core2",     "nehalem", "katmai",     "coppermine", "northwood",
                                          "generic",  "atom",      "penryn",  "dunnington", "opteron",    "barcelona",
                                          "sandybridge", "bulldozer", "piledriver", "steamroller", "excavator", "bobcat"};
    for (size_t i = 0; i < sizeof generic / sizeof generic[0]; i++)
        if (strcasecmp(c, generic[i]) == 0) return 1;
    return 0;
}

/* The kernel class for this CPU from its ISA, which (unlike OpenBLAS's
 * detection by family/model) cannot be out of date: AVX-512F -> SkylakeX
 * (with AVX512_BF16: Cooperlake, whose sbgemm uses it), AVX2 -> Haswell
 * (which OpenBLAS's Zen core also uses); NULL below AVX2. */
static const char *core_for_isa(void) {
    if (gpt2c_cpu_best_isa() == GPT2C_ISA_AVX512) return gpt2c_cpu_has_avx512bf16() ? "Cooperlake" : "SkylakeX";
    if (gpt2c_cpu_best_isa() == GPT2C_ISA_AVX2) return "Haswell";
    return NULL;
}

static int try_open(const char *path) {
    lib.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib.handle) return 0;
    snprintf(lib.path, sizeof lib.path, "%s", path);
    return 1;
}

static int load(void) {
    if (lib.tried) return lib.sgemm != NULL;
    lib.tried = 1;
    /* OpenBLAS reads OPENBLAS_CORETYPE in its load-time constructor, i.e.
     * during the dlopen below: setting it here takes effect (the core it
     * then runs is read back with openblas_get_corename and shown). */
    const char *env = getenv("OPENBLAS_CORETYPE"), *core = core_for_isa();
    /* GPT2C_KEEP_OPENBLAS_CORETYPE=1 keeps the environment's choice (to measure it) */
    if (env && *env && core && !getenv("GPT2C_KEEP_OPENBLAS_CORETYPE") &&
        ((gpt2c_cpu_best_isa() == GPT2C_ISA_AVX512 && coretype_lacks_avx512(env)) || coretype_generic(env))) {
        snprintf(lib.note, sizeof lib.note, "OPENBLAS_CORETYPE=%s in the environment lacks this %s CPU's kernels: using %s", env,
                 gpt2c_isa_name(gpt2c_cpu_best_isa()), core);
        setenv("OPENBLAS_CORETYPE", core, 1);
    } else if ((!env || !*env) && core) {
        snprintf(lib.note, sizeof lib.note, "OPENBLAS_CORETYPE=%s chosen from this CPU's ISA (%s)", core, gpt2c_cpu_signature());
        setenv("OPENBLAS_CORETYPE", core, 1);
    }
    const char *want = getenv("GPT2C_BLAS_LIB");
    const char *candidates[] = {want, GPT2C_CBLAS_LIBRARY, "libopenblas.so.0", "libblis.so.4", "libcblas.so.3"};
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && !lib.handle; i++)
        if (candidates[i] && *candidates[i]) try_open(candidates[i]);
    if (!lib.handle) {
        snprintf(lib.why, sizeof lib.why, "cannot load a cblas library (%s; set GPT2C_BLAS_LIB)", dlerror());
        return 0;
    }
    lib.sgemm = (sgemm_fn)dlsym(lib.handle, "cblas_sgemm");
    lib.set_threads = (set_threads_fn)dlsym(lib.handle, "openblas_set_num_threads");
    lib.config = (get_str_fn)dlsym(lib.handle, "openblas_get_config");
    lib.corename = (get_str_fn)dlsym(lib.handle, "openblas_get_corename");
    if (!lib.sgemm) snprintf(lib.why, sizeof lib.why, "%s has no cblas_sgemm", lib.path);
    /* never silently generic: say so when OpenBLAS ignored the choice */
    const char *cn = lib.corename ? lib.corename() : NULL;
    if (cn && gpt2c_cpu_best_isa() >= GPT2C_ISA_AVX2 && coretype_generic(cn)) {
        const size_t l = strlen(lib.note);
        snprintf(lib.note + l, sizeof lib.note - l, "%sWARNING: OpenBLAS runs its generic %s core on this %s CPU (slow)",
                 l ? "; " : "", cn, gpt2c_isa_name(gpt2c_cpu_best_isa()));
    }
    return lib.sgemm != NULL;
}

/* OpenBLAS keeps its own thread pool: follow our thread count. */
static void sync_threads(void) {
    static int last = -1;
    int n = omp_get_max_threads();
    if (lib.set_threads && n != last) {
        lib.set_threads(n);
        last = n;
    }
}

/* out (N,OC) = inp (N,IC) W^T + bias: rows start at bias, then sgemm with beta = 1 */
static void blas_matmul_forward(float *out, const float *inp, const gpt2c_tensor *wt, const float *bias, int N,
                                int IC, int OC) {
    const float *w = (const float *)wt->data; /* f32 only (formats mask) */
    sync_threads();
    if (bias)
        for (int n = 0; n < N; n++) memcpy(out + (size_t)n * OC, bias, sizeof(float) * OC);
    lib.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, inp, IC, w, IC, bias ? 1.0f : 0.0f, out, OC);
}

static void blas_matmul_backward(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                                 const gpt2c_tensor *wt, int N, int IC, int OC, int dw_acc) {
    const float *w = (const float *)wt->data; /* f32 only (formats mask) */
    sync_threads();
    if (dinp) /* dinp (N,IC) = dout (N,OC) W (OC,IC) */
        lib.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, dout, OC, w, IC, 0.0f, dinp, IC);
    /* dW (OC,IC) += dout^T inp, or = (beta 0: dW not read) (skipped for a frozen weight) */
    if (dw)
        lib.sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, dout, OC, inp, IC, dw_acc ? 1.0f : 0.0f, dw, IC);
    if (!dbias) return;
    const int strips = (OC + 63) / 64;
#pragma omp parallel for schedule(static) if ((size_t)N * OC >= 16384)
    for (int s = 0; s < strips; s++) { /* column sums, rows in order */
        const int c0 = s * 64, c1 = c0 + 64 < OC ? c0 + 64 : OC;
        float acc[64] = {0};
        for (int n = 0; n < N; n++)
            for (int i = c0; i < c1; i++) acc[i - c0] += dout[(size_t)n * OC + i];
        for (int i = c0; i < c1; i++) dbias[i] += acc[i - c0];
    }
}

static const gpt2c_kernels *gpt2c_kernels_blas(void) {
    static gpt2c_kernels t;
    static int ready;
    if (!load()) return NULL;
    if (!ready) {
        t = *gpt2c_kernels_cpu(); /* every other op: the cpu backend's */
        t.name = "blas";
        t.isa = "cblas";
        t.matmul_forward = blas_matmul_forward;
        t.matmul_backward = blas_matmul_backward;
        t.formats.matmul_forward = t.formats.matmul_backward = 0; /* f32 only: no sbgemm is used */
        /* inference: ref's ops, as before the cpu table carried its own */
        t.matmul_infer_range = NULL;
        t.kv_write = NULL;
        t.attention_kv_range = NULL;
        ready = 1;
    }
    return &t;
}

GPT2C_BACKEND_REGISTER(blas, gpt2c_kernels_blas, gpt2c_blas_describe)

const char *gpt2c_blas_describe(void) {
    static char buf[1024];
    if (!load()) {
        snprintf(buf, sizeof buf, "unavailable: %s", lib.why);
        return buf;
    }
    if (lib.config && lib.corename)
        snprintf(buf, sizeof buf, "%s (%s, core %s)%s%s", lib.path, lib.config(), lib.corename(), lib.note[0] ? "; " : "",
                 lib.note);
    else
        snprintf(buf, sizeof buf, "%s (not OpenBLAS)", lib.path);
    return buf;
}

void gpt2c_blas_linear_gemm(gemm_linear_op op, float *C, const float *A, const float *B, int N, int IC, int OC) {
    if (!load()) return; /* callers learn why from gpt2c_blas_describe() first (bench gemm drops the column) */
    sync_threads();
    switch (op) {
    case GEMM_FWD: lib.sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1.0f, A, IC, B, IC, 0.0f, C, OC); break;
    case GEMM_DINP: lib.sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1.0f, A, OC, B, IC, 0.0f, C, IC); break;
    case GEMM_DW:
    case GEMM_DW_ACC:
        lib.sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1.0f, A, OC, B, IC, op == GEMM_DW_ACC ? 1.0f : 0.0f, C, IC);
        break;
    }
}

const char *gpt2c_blas_sbgemm_status(void) {
    static char buf[700];
    if (!load()) {
        snprintf(buf, sizeof buf, "unavailable: %s", lib.why);
        return buf;
    }
    /* looked up, not used: the bf16 GEMMs are the cpu backend's */
    if (dlsym(lib.handle, "cblas_sbgemm"))
        snprintf(buf, sizeof buf, "cblas_sbgemm present in %s (not timed: bench gemm times only cblas_sgemm)", lib.path);
    else
        snprintf(buf, sizeof buf, "no cblas_sbgemm in %s (OpenBLAS has one only when built with BUILD_BFLOAT16): no bf16 BLAS column", lib.path);
    return buf;
}
