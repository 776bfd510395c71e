/* The simulator's internals: mesh and PE state (mesh.c), SIMD cost table
 * (ops.c), fabric transfers at two fidelities (fabric.c), line collectives
 * (coll.c).  Time is in cycles; every PE has its own compute-engine clock, so
 * regions run concurrently and the run is deterministic (no threads, fixed
 * orders, ties broken by sequence numbers). */
#ifndef GPT2C_WSE_INTERNAL_H
#define GPT2C_WSE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "gpt2c/wse.h"

#define WSE_MAX_COLORS 24
#define WSE_QUEUES 8
#define WSE_TASKS 64

enum { WSE_N = 0, WSE_S = 1, WSE_E = 2, WSE_W = 3, WSE_RAMP = 4 };

/* queues, tasks: only for PEs that bind them (lazily allocated) */
typedef struct {
    uint64_t in_busy[WSE_QUEUES], out_busy[WSE_QUEUES]; /* microthread on the queue until */
    uint64_t task_bound;                                 /* bit per task ID */
} wse_pe_ext;

typedef struct wse_pe {
    uint64_t t_ce;          /* compute engine free at (and inputs arrived by) */
    uint64_t busy;          /* cycles of DSD ops */
    uint64_t op_busy;       /* busy cycles within the op tagged op_tag */
    uint32_t op_tag;
    uint32_t sram_used;     /* bytes, bump allocator (layout time) */
    uint32_t color_mask;    /* colors with a route here */
    uint8_t rx[WSE_MAX_COLORS]; /* 0 unset, else 1 + upstream direction */
    uint8_t tx[WSE_MAX_COLORS]; /* bit mask of downstream directions (incl. RAMP) */
    float *mem;             /* values (sram_used bytes), NULL in none mode */
    wse_pe_ext *ext;
} wse_pe;

typedef enum {
    WSE_OP_FMACS, WSE_OP_FADDS, WSE_OP_FMULS, WSE_OP_FMOVS, WSE_OP_FMAXS, WSE_OP_FMACH, WSE_OP_FADDH,
    WSE_OP_FMULH, WSE_OP_FMOVH, WSE_OP_FMAXH, WSE_OP_SPECIAL, WSE_OP_SEND, WSE_NOPS
} wse_op;

/* one op kind of the GPT-2 program, per phase and layer, for the report */
typedef struct {
    char name[32];
    int layer; /* -1: not a layer op */
    int phase; /* 0 prefill, 1 decode */
    uint64_t t0, t1;           /* span */
    uint64_t busy_sum, busy_max; /* over PEs */
    uint64_t pes;              /* PE-op participations */
    uint64_t span_sum, busymax_sum, pe_span_sum; /* per call, summed */
    uint64_t crit_sum; /* how far each call pushed the latest end time: these add up to the makespan */
    double flops;
    long calls;
} wse_opstat;

typedef struct {
    uint64_t pe; /* pe index */
    uint64_t t0, t1;
    int op; /* index into opstats */
} wse_trace_ev;

typedef struct wse_mesh {
    gpt2c_wse_params p;
    int W, H;
    gpt2c_wse_fidelity fidelity;
    gpt2c_wse_values values;
    wse_pe *pe;
    uint64_t *link_free; /* 4 per PE (N,S,E,W out-links) */
    uint64_t *link_load; /* wavelets carried */
    uint32_t sram_budget;
    int user_colors;     /* colors 0 .. user_colors-1 usable */
    uint32_t switched;   /* colors with dynamic (switch) routing: several roots over time */
    /* op accounting */
    wse_opstat *ops;
    int nops, capops, cur;
    uint64_t call_t0, call_t1, call_busymax, call_pes, last_t1;
    uint32_t tag_seq;
    /* trace */
    uint8_t *traced; /* per PE flag (NULL: none) */
    wse_trace_ev *tev;
    size_t ntev, captev;
    uint64_t events; /* wavelet events processed (wavelet fidelity) */
    /* fabric scratch for wavelet mode */
    void *heap;
    size_t heap_cap;
} wse_mesh;

static inline wse_pe *wse_at(wse_mesh *m, int x, int y) { return &m->pe[(size_t)y * m->W + x]; }
static inline size_t wse_idx(const wse_mesh *m, int x, int y) { return (size_t)y * m->W + x; }

/* mesh.c */
gpt2c_status gpt2c_wse_mesh_create(const gpt2c_wse_params *p, gpt2c_wse_values values, gpt2c_wse_fidelity fid,
                             wse_mesh **out);
void gpt2c_wse_mesh_free(wse_mesh *m);
/* Bump-allocates bytes on PE (x,y) for `what`; *off gets the float offset. */
gpt2c_status gpt2c_wse_alloc(wse_mesh *m, int x, int y, size_t floats, const char *what, uint32_t *off);
/* After layout: allocates value memory (values modes). */
gpt2c_status gpt2c_wse_mesh_commit(wse_mesh *m);
/* Route of `color` at (x,y): upstream direction rx, downstream tx mask (merged). */
gpt2c_status gpt2c_wse_route(wse_mesh *m, int x, int y, int color, int rx, unsigned tx);
/* A microthread on in/out queue q of (x,y) during [t0, t1): fails if one overlaps. */
gpt2c_status gpt2c_wse_queue_use(wse_mesh *m, int x, int y, int q, int out, uint64_t t0, uint64_t t1);
/* Binds task ID `id` of (x,y) (kind 'd' data, 'l' local, 'c' control). */
gpt2c_status gpt2c_wse_bind_task(wse_mesh *m, int x, int y, int id, char kind);
int gpt2c_wse_colors_used(const wse_pe *pe);

/* ops.c: cycles of one DSD op of n elements at the given stride (in elements) */
int gpt2c_wse_op_width(const wse_mesh *m, wse_op op, int stride);
uint64_t gpt2c_wse_op_cycles(const wse_mesh *m, wse_op op, long n, int stride);
/* Runs `count` ops of n elements on PE (x,y) no earlier than `ready`; returns the end. */
uint64_t gpt2c_wse_compute(wse_mesh *m, int x, int y, wse_op op, long count, long n, int stride, uint64_t ready);
/* Local C (M x N) += A (M x K) B (K x N) as SAXPYs along the cheaper axis; returns the end. */
uint64_t gpt2c_wse_local_gemm(wse_mesh *m, int x, int y, long M, long N, long K, int strideB, uint64_t ready);
void gpt2c_wse_wait(wse_mesh *m, int x, int y, uint64_t t); /* inputs arrive at t */
/* op accounting: starts op (name, layer, phase) */
void gpt2c_wse_op_begin(wse_mesh *m, const char *name, int layer, int phase, double flops);
void gpt2c_wse_op_flush(wse_mesh *m); /* closes the current call */

/* fabric.c: a stream of n wavelets from (x,y): hops1 in dir1, then hops2 in dir2
 * (colors color1, color2: a turn swaps to the paired color).  deliver_all: every
 * PE on the path takes a copy (multicast); otherwise only the last.  hop_ready
 * (optional, hops1+hops2 entries): the stream leaves PE i (i = 0 the source)
 * no earlier than hop_ready[i] (a streaming reduction: PE i adds its part).
 * extra: cycles added per hop (the in-stream add).  arrive[i]: the tail's
 * arrival at the i-th PE after the source (i = 0 .. hops-1). */
typedef struct {
    int x, y, dir1, hops1, dir2, hops2, color1, color2, deliver_all, extra;
    long n;
    uint64_t t0;
    const uint64_t *hop_ready;
    const uint8_t *hop_add; /* optional: `extra` only where PE i adds (else it just forwards) */
    uint64_t *arrive;
} wse_xfer;
gpt2c_status gpt2c_wse_fabric_run(wse_mesh *m, wse_xfer *x, int nx);

#endif
