#!/usr/bin/env bash
# Cost of the software counters at scope edges, as gpt2c measures it inside its counter hooks
# ("counter reads at scope edges: X ms per step = Y% of the step"), with snapshot reuse off
# (GPT2C_PROF_CHAIN_NS=0: a begin and an end snapshot per op, as before) and on (the default),
# plus `profile --overhead` (off / timers / timers + counters, medians of alternating rounds).
# Usage: bench/profile_overhead.sh [GPT2C]   (default build/gpt2c; env REPEAT, default 2)
set -eu
G=${1:-build/gpt2c}
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p') family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "${REPEAT:-2}"); do
  for chain in 0 50000; do
    echo "== GPT2C_PROF_CHAIN_NS=$chain (repeat $r)"
    GPT2C_PROF_CHAIN_NS=$chain "$G" profile --model gpt2 --batch 4 --seq 64 --steps 2 --trials 3 --warmup 1 --no-peak \
      ${OVERHEAD:+--overhead} 2>&1 | grep -E "^step [0-9]|counter reads|profiling cost"
  done
done
