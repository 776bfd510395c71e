/* Internal: the quantized weights' codes and scales in one block of memory
 * (src/quant/quant_arena.c). */
#ifndef GPT2C_QUANT_ARENA_H
#define GPT2C_QUANT_ARENA_H

#include "gpt2c/quant_model.h"

/* Moves every quantized tensor's codes and scales of q into one block backed
 * by 2 MiB pages where the OS gives them, in the order decode reads them
 * (layer by layer, the LM head last).  Leaves q as it was if that memory
 * cannot be had, or with GPT2C_QUANT_ARENA=0 in the environment. */
void gpt2c_qweights_pack_arena(gpt2c_qweights *q);
/* Gives the block back (gpt2c_qweights_free calls it). */
void gpt2c_qweights_arena_free(gpt2c_qweights *q);

#endif
