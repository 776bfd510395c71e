#!/usr/bin/env bash
# Perplexity cost of the bf16 prefill of quantized weights (issue 13, qprefill; bench/qprefill_ppl.c): each
# validation sequence prefilled in one pass through the inference path, with f32 / bf16 prefill GEMMs and an
# f32 / bf16 KV cache, per format (FMTS, default "f32 q8 q4 nf4").
# Usage: bench/qprefill_ppl.sh BUILD_DIR CKPT VAL.bin   (MAXSEQS=n: the first n sequences of SEQ=256 only)
set -eu
B="$1"; CKPT="$2"; VAL="$3"
cmake --build "$B" --target qprefill_ppl >/dev/null   # the build's link line (CUDA runtime included where it has one)
lscpu | grep -E "Model name|CPU family|Model:|Flags" | sed 's/Flags:.*avx512_bf16.*/Flags: ... avx512_bf16 .../' | tr -s ' '
for f in ${FMTS:-f32 q8 q4 nf4}; do "$B/qprefill_ppl" "$CKPT" $f "$VAL" "${SEQ:-256}" "${MAXSEQS:-0}"; done
