#!/usr/bin/env bash
# bf16 vs fp32 GEMMs on GPT-2 124M's shapes (issue 12), one interleaved sitting.
# Usage: bench/bf16.sh [path/to/gpt2c]   (default build/gpt2c)
# Prints the CPU, the peaks (fp32 FMA and vdpbf16ps), then for R rounds the
# fp32 and bf16 `bench gemm` tables back to back, so a shared machine's load
# hits both alike; compare the medians of the rounds.
#   threads=1 cputime=1: per-core efficiency, immune to preemption (the
#   figures BENCHMARKS.md quotes when the machine was shared);
#   threads=0 (all cores), cputime=0: wall time, for a quiet machine.
set -euo pipefail
G=${1:-build/gpt2c}
R=${R:-3}
T=${THREADS:-1}
CT=${CPUTIME:-1}
extra=()
[ "$CT" = 1 ] && extra+=(--cpu-time)
lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:|Stepping|^CPU\(s\)" || true
uptime
"$G" bench peak --threads "$T" --remeasure
for r in $(seq "$R"); do
  echo "== round $r"
  "$G" bench gemm --precision fp32 --threads "$T" --n "${NS:-256}" --reps "${REPS:-5}" "${extra[@]}"
  "$G" bench gemm --precision bf16 --threads "$T" --n "${NS:-256}" --reps "${REPS:-5}" "${extra[@]}"
done
