#!/usr/bin/env bash
# Perplexity cost of the int8 activations of the q8 / q4 decode kernels and of the bf16 KV cache
# (bench/quant_act_ppl.c): the validation split through the decode path with int8 / fp32 activations
# and an fp32 / bf16 cache, per format (FMTS, default "f32 q8 q4 nf4").
# Usage: bench/quant_act_ppl.sh BUILD_DIR CKPT VAL.bin   (MAXSEQS=n: score the first n sequences of 256 only)
set -eu
B="$1"; CKPT="$2"; VAL="$3"
root="$(cd "$(dirname "$0")/.." && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
pkgs="$(pkg-config --libs jansson libmicrohttpd libutf8proc 2>/dev/null || true)"
cc -O2 -std=c11 -fopenmp -I"$root/include" "$root/bench/quant_act_ppl.c" "$B/libgpt2c.a" $pkgs -lm -o "$W/ppl"
for f in ${FMTS:-f32 q8 q4 nf4}; do "$W/ppl" "$CKPT" $f "$VAL" 256 "${MAXSEQS:-0}"; done
