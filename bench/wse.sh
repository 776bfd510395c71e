#!/usr/bin/env bash
# gpt2c wse: full-wafer cost-only runs of GPT-2 124M (750x994 PEs, strategies a and b),
# the sensitivity sweep, and a small f32 check.  Times are simulation wall time on this
# host; cycles are the simulator's.  Usage: bench/wse.sh [build/gpt2c] [outdir]
set -euo pipefail
G=${1:-build/gpt2c}
OUT=${2:-wse-bench}
mkdir -p "$OUT"
lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:" || true
for s in a b; do
  /usr/bin/time -f "strategy $s: %e s wall, %M KiB max RSS" \
    "$G" wse run --model gpt2 --values none --seq 64 --chunk 16 --decode 16 --strategy $s --quiet --out "$OUT/full_$s"
done
/usr/bin/time -f "sweep: %e s wall" "$G" wse sweep --model gpt2 --seq 16 --decode 4 --out "$OUT"
"$G" wse run --model gpt2 --layers 2 --embd 64 --heads 4 --vocab 512 --ctx 128 --mesh 32x16 --strategy b \
  --seq 16 --decode 16 --values f32 --fidelity wavelet --quiet --out "$OUT/small_b"
