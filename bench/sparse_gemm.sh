#!/usr/bin/env bash
# Sparse weight formats (unstructured CSR at 50/80/90%, 2:4 at 50%) against gpt2c's
# dense fp32 inference matmul, on GPT-2 124M's weight shapes, decode (N=1) and prefill
# (N=256), 1 and 2 threads (bench/sparse_gemm.c says how).  Not built by CMake or CI.
# Usage: bench/sparse_gemm.sh [BUILD_DIR] [REPS]
set -eu
B="${1:-build}"
REPS="${2:-9}"
root="$(cd "$(dirname "$0")/.." && pwd)"
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
. "$root/bench/lib/driver.sh"
bench_driver "$W/sparse_gemm" "$root/bench/sparse_gemm.c" "$root" "$B" -O3 -march=native -Wall -Wextra
lscpu | grep -E "Vendor ID|CPU family|Model:|Model name|L3" | tr -s ' '
uptime
for t in 1 2; do
  OMP_PROC_BIND=false "$W/sparse_gemm" "$t" "$REPS"
done
