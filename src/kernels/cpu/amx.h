/* Intel AMX (Advanced Matrix Extensions) on this CPU and OS: whether the cpu
 * backend may run TDPBF16PS, the bf16 tile multiply of Sapphire / Emerald
 * Rapids (one instruction: 16 x 16 fp32 outputs += 16 x 32 by 32 x 16 bf16,
 * 16384 FLOPs; about 7.5x the fp32 FMA peak on the model-207 VM measured in
 * the fifteenth session, bench/amx_peak.c).
 *
 * Three things must hold: the CPU has AMX-TILE and AMX-BF16 (CPUID.(7,0):EDX
 * bits 24 and 22), the OS saves the tile state (XCR0 bits 17 and 18), and
 * Linux grants this process the tile data state (arch_prctl
 * ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA: without it the first tile
 * instruction kills the process with SIGILL).  The answer is decided once. */
#ifndef GPT2C_CPU_AMX_H
#define GPT2C_CPU_AMX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The 64-byte tile configuration LDTILECFG reads (palette 1). */
typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} __attribute__((packed)) gpt2c_amx_config;

/* All eight tiles 16 rows x 64 bytes: the only shape the cpu backend uses
 * (fp32 C 16 x 16; bf16 pairs A 16 x 32 and B 32 x 16). */
static inline void gpt2c_amx_config_16x64(gpt2c_amx_config *c) {
    memset(c, 0, sizeof *c);
    c->palette = 1;
    for (int t = 0; t < 8; t++) c->rows[t] = 16, c->colsb[t] = 64;
}

/* 1 if the AMX bf16 tiles can run here (the permission requested on the
 * first call); else 0.  `why` (may be NULL): one line, e.g. "AMX-BF16: yes"
 * or "no AMX-BF16 on this CPU (CPUID.(7,0):EDX bit 22)". */
int gpt2c_cpu_amx_usable(const char **why);

/* 1 if this build has the AMX kernel (its compiler knew -mamx-tile). */
int gpt2c_cpu_amx_built(void);

#endif
