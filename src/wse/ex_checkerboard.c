/* The `gemv-checkerboard-pattern` example of csl-examples, ported task by task:
 * y = A x + b in fp16 on kernel_cols x kernel_rows PEs.  Same colors (x_in 1,
 * ax_out 3, b_in 4, memcpy H2D 10/11, D2H 12), checkerboard color swap by
 * column parity, routes, queues (in 1, out 2 and 5) and task IDs (data tasks
 * on colors 1, 10, 11; REDUCE 24) as its layout.csl / pe.csl; run.py's sizes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wse/task.h"

enum { X_IN = 1, AX_OUT = 3, B_IN = 4, H2D_1 = 10, H2D_2 = 11, C_REDUCE = 24 };

typedef struct {
    int send, recv, last_column, num_recv_x;
    float *A, *mul_temp, buf[1];
} pe_state;

typedef struct {
    int W, H, dx, dy, xd; /* A_local_dim_x (rows), A_local_dim_y (cols), X_local_dim_x */
    pe_state *pe;
    float *y_host;
} prog;

static prog *PR(wse_prog *pg) { return gpt2c_wse_prog_user(pg); }
static pe_state *S(wse_prog *pg, int x, int y) { return &PR(pg)->pe[y * PR(pg)->W + x]; }

/* data task on x_in: y(:) += A(:, idx) * x_j */
static void fmac_task(wse_prog *pg, int x, int y, float data, int idx) {
    pe_state *s = S(pg, x, y);
    int dx = PR(pg)->dx, dy = PR(pg)->dy;
    gpt2c_wse_compute(gpt2c_wse_prog_mesh(pg), x, y, WSE_OP_FMACH, 1, dx, dy, 0); /* A[i, idx]: stride dy */
    for (int i = 0; i < dx; i++) s->mul_temp[i] = gpt2c_wse_to_half(s->mul_temp[i] + s->A[i * dy + idx] * data);
    s->num_recv_x += 1;
    if (s->num_recv_x >= PR(pg)->xd) gpt2c_wse_activate(pg, x, y, C_REDUCE);
}

/* y = A x + y_west, streamed east (or to the host from the last column) */
static void reduce_task(wse_prog *pg, int x, int y) {
    pe_state *s = S(pg, x, y);
    int n = PR(pg)->dx;
    gpt2c_wse_stream_add_async(pg, x, y, s->recv, 1, s->mul_temp, s->last_column ? -1 : s->send, 2, n, 1,
                         PR(pg)->y_host + (size_t)y * n);
}

/* first row: x from the host, forwarded down the column (itself included) on x_in */
static void wtt_memcpyh2d_x(wse_prog *pg, int x, int y, float data, int idx) {
    pe_state *s = S(pg, x, y);
    gpt2c_wse_block(pg, x, y, H2D_1);
    s->buf[0] = data;
    gpt2c_wse_send_async_ex(pg, x, y, X_IN, 5, s->buf, &idx, 1, -1, H2D_1);
}

/* first column: b from the host, forwarded to itself on recv */
static void wtt_memcpyh2d_b(wse_prog *pg, int x, int y, float data, int idx) {
    pe_state *s = S(pg, x, y);
    gpt2c_wse_block(pg, x, y, H2D_2);
    s->buf[0] = data;
    gpt2c_wse_send_async_ex(pg, x, y, s->recv, 5, s->buf, &idx, 1, -1, H2D_2);
}

gpt2c_status gpt2c_wse_example_checkerboard(const gpt2c_wse_params *p, int kernel_cols, int kernel_rows,
                                            int matrix_rows, int matrix_cols, gpt2c_wse_kernel_row *row) {
    memset(row, 0, sizeof *row);
    if (kernel_cols < 2 || kernel_rows < 1 || kernel_cols > 64 || kernel_rows > 64 || matrix_rows % kernel_rows ||
        matrix_cols % kernel_cols || matrix_cols % kernel_rows || matrix_rows < 1 || matrix_cols < 1 ||
        matrix_rows > 4096 || matrix_cols > 4096)
        return gpt2c_fail(GPT2C_ERR_RANGE, "wse: checkerboard example: %dx%d matrix on %dx%d PEs does not divide",
                          matrix_rows, matrix_cols, kernel_cols, kernel_rows);
    gpt2c_wse_params q = *p;
    q.v[GPT2C_WSE_P_WIDTH] = kernel_cols;
    q.v[GPT2C_WSE_P_HEIGHT] = kernel_rows;
    wse_mesh *m;
    GPT2C_TRY(gpt2c_wse_mesh_create(&q, GPT2C_WSE_VALUES_F16, GPT2C_WSE_FLOW, &m));
    prog P = {kernel_cols, kernel_rows, matrix_rows / kernel_rows, matrix_cols / kernel_cols, matrix_cols / kernel_rows,
              NULL, NULL};
    P.pe = calloc((size_t)kernel_cols * kernel_rows, sizeof *P.pe);
    P.y_host = calloc((size_t)matrix_rows, sizeof(float));
    float *A = malloc(sizeof(float) * (size_t)matrix_rows * matrix_cols), *X = malloc(sizeof(float) * (size_t)matrix_cols),
          *B = malloc(sizeof(float) * (size_t)matrix_rows);
    wse_prog *pg = NULL;
    gpt2c_status st = (!P.pe || !P.y_host || !A || !X || !B) ? gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory")
                                                              : gpt2c_wse_prog_create(m, &P, &pg);
    const unsigned R = 1u << WSE_RAMP, So = 1u << WSE_S, E = 1u << WSE_E;
    for (int i = 0; i < kernel_cols && !st; i++)
        for (int j = 0; j < kernel_rows && !st; j++) {
            pe_state *s = &P.pe[j * kernel_cols + i];
            s->recv = i % 2 ? AX_OUT : B_IN; /* swapped colors on odd columns */
            s->send = i % 2 ? B_IN : AX_OUT;
            s->last_column = i == kernel_cols - 1;
            uint32_t oA, oy;
            st = gpt2c_wse_alloc(m, i, j, (size_t)P.dx * P.dy, "A", &oA);
            if (!st) st = gpt2c_wse_alloc(m, i, j, (size_t)P.dx, "mul_temp", &oy);
            if (!st) st = gpt2c_wse_mesh_commit(m);
            if (st) break;
            s->A = wse_at(m, i, j)->mem + oA;
            s->mul_temp = wse_at(m, i, j)->mem + oy;
            /* routes of layout.csl */
            if (i == 0) st = gpt2c_wse_route(m, i, j, B_IN, WSE_RAMP, R);
            else if (i % 2 == 0) st = gpt2c_wse_route(m, i, j, B_IN, WSE_W, R);
            else st = gpt2c_wse_route(m, i, j, B_IN, WSE_RAMP, E);
            if (!st) st = i % 2 == 0 ? gpt2c_wse_route(m, i, j, AX_OUT, WSE_RAMP, E) : gpt2c_wse_route(m, i, j, AX_OUT, WSE_W, R);
            if (!st) {
                if (j == kernel_rows - 1 && j > 0) st = gpt2c_wse_route(m, i, j, X_IN, WSE_N, R);
                else if (j == 0) st = gpt2c_wse_route(m, i, j, X_IN, WSE_RAMP, R | (kernel_rows > 1 ? So : 0));
                else st = gpt2c_wse_route(m, i, j, X_IN, WSE_N, R | So);
            }
            if (!st) st = gpt2c_wse_bind_data(pg, i, j, X_IN, fmac_task);
            if (!st) st = gpt2c_wse_bind_data(pg, i, j, H2D_1, wtt_memcpyh2d_x);
            if (!st) st = gpt2c_wse_bind_data(pg, i, j, H2D_2, wtt_memcpyh2d_b);
            if (!st) st = gpt2c_wse_bind_local(pg, i, j, C_REDUCE, reduce_task);
            if (!st) gpt2c_wse_block(pg, i, j, s->recv); /* recv feeds a microthread */
        }
    if (!st) {
        /* run.py: random fp16 A, x, b; A row-major per PE; x streamed into row 0, b into column 0 */
        uint32_t seed = 99;
        for (int k = 0; k < matrix_rows * matrix_cols; k++) { seed = seed * 1664525u + 1013904223u; A[k] = gpt2c_wse_to_half((float)((seed >> 8) & 0xffff) / 65536.0f); }
        for (int k = 0; k < matrix_cols; k++) { seed = seed * 1664525u + 1013904223u; X[k] = gpt2c_wse_to_half((float)((seed >> 8) & 0xffff) / 65536.0f); }
        for (int k = 0; k < matrix_rows; k++) { seed = seed * 1664525u + 1013904223u; B[k] = gpt2c_wse_to_half((float)((seed >> 8) & 0xffff) / 65536.0f); }
        for (int i = 0; i < kernel_cols; i++)
            for (int j = 0; j < kernel_rows; j++) {
                pe_state *s = &P.pe[j * kernel_cols + i];
                for (int r = 0; r < P.dx; r++)
                    for (int c = 0; c < P.dy; c++) s->A[r * P.dy + c] = A[(size_t)(j * P.dx + r) * matrix_cols + i * P.dy + c];
            }
        int *idx = malloc(sizeof(int) * (size_t)(P.dy > P.dx ? P.dy : P.dx));
        if (!idx) st = gpt2c_fail(GPT2C_ERR_NOMEM, "wse: out of memory");
        else {
            for (int k = 0; k < P.dy || k < P.dx; k++) idx[k] = k;
            for (int i = 0; i < kernel_cols; i++) gpt2c_wse_host_h2d(pg, i, 0, H2D_1, X + i * P.dy, idx, P.dy);
            for (int j = 0; j < kernel_rows; j++) gpt2c_wse_host_h2d(pg, 0, j, H2D_2, B + j * P.dx, NULL, P.dx);
            free(idx);
            st = gpt2c_wse_prog_launch(pg, NULL);
        }
    }
    if (!st) {
        double num = 0, den = 0;
        for (int r = 0; r < matrix_rows; r++) {
            double ref = B[r];
            for (int c = 0; c < matrix_cols; c++) ref += (double)A[(size_t)r * matrix_cols + c] * X[c];
            if (fabs(P.y_host[r] - ref) > num) num = fabs(P.y_host[r] - ref);
            if (fabs(ref) > den) den = fabs(ref);
        }
        row->max_rel_err = den > 0 ? num / den : num;
        for (size_t i = 0; i < (size_t)kernel_cols * kernel_rows; i++) {
            const wse_pe *pe = &m->pe[i];
            if (pe->t_ce > row->cycles) row->cycles = pe->t_ce;
            if (pe->busy > row->compute) row->compute = pe->busy;
            if (gpt2c_wse_colors_used(pe) > row->colors_max) row->colors_max = gpt2c_wse_colors_used(pe);
        }
        row->comm = row->cycles > row->compute ? row->cycles - row->compute : 0;
        row->max_hops_per_step = kernel_cols - 1;
    }
    free(A); free(X); free(B); free(P.pe); free(P.y_host);
    gpt2c_wse_prog_free(pg);
    gpt2c_wse_mesh_free(m);
    return st;
}
