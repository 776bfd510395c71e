#!/usr/bin/env bash
# The quantized matmul kernels alone, one thread, per format (bench/qmatmul_micro.c):
# decode (1 row), 2 rows and batch 8, for GPT-2's 768- and 3072-wide rows, weights in L3 (compute-bound)
# and a 115 MB stack (memory-bound; in 4 KiB and in 2 MiB pages, HUGE=1). Both activation modes for q8/q4
# (GPT2C_QUANT_ACT=f32 vs int8).
# Usage: bench/qmatmul_micro.sh [BUILD_DIR]
set -eu
B="${1:-build}"
root="$(cd "$(dirname "$0")/.." && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
. "$root/bench/lib/driver.sh"
bench_driver "$W/micro" "$root/bench/qmatmul_micro.c" "$root" "$B"
lscpu | grep -E "Vendor ID|CPU family|Model:|Model name" | tr -s ' '
uptime
for act in int8 f32; do
  echo "== GPT2C_QUANT_ACT=$act"
  GPT2C_QUANT_ACT=$act "$W/micro" 1 768 4096 300
  GPT2C_QUANT_ACT=$act "$W/micro" 1 3072 1024 300
  GPT2C_QUANT_ACT=$act "$W/micro" 2 768 4096 300
  GPT2C_QUANT_ACT=$act "$W/micro" 8 768 4096 100
  GPT2C_QUANT_ACT=$act "$W/micro" 1 768 147456 5
  echo "   (2 MiB pages)"; HUGE=1 GPT2C_QUANT_ACT=$act "$W/micro" 1 768 147456 5
done
