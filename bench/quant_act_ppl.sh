#!/usr/bin/env bash
# Perplexity cost of the int8 activations of the q8 / q4 decode kernels and of the bf16 KV cache
# (bench/quant_act_ppl.c): the validation split through the decode path with int8 / fp32 activations
# and an fp32 / bf16 cache, per format (FMTS, default "f32 q8 q4 nf4").
# Usage: bench/quant_act_ppl.sh BUILD_DIR CKPT VAL.bin   (MAXSEQS=n: score the first n sequences of 256 only)
set -eu
B="$1"; CKPT="$2"; VAL="$3"
cmake --build "$B" --target quant_act_ppl >/dev/null   # the build's link line (CUDA runtime included where it has one)
for f in ${FMTS:-f32 q8 q4 nf4}; do "$B/quant_act_ppl" "$CKPT" $f "$VAL" 256 "${MAXSEQS:-0}"; done
