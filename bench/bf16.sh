#!/usr/bin/env bash
# bf16 vs fp32 (issue 12), one interleaved sitting.
# Usage: bench/bf16.sh [path/to/gpt2c]   (default build/gpt2c)
# Prints the CPU, then
#  1. GEMM=1 (default): the peaks (fp32 FMA and vdpbf16ps) and for R rounds
#     the fp32 and bf16 `bench gemm` tables back to back, so a shared
#     machine's load hits both alike; compare the medians of the rounds.
#       threads=1 cputime=1: per-core efficiency, immune to preemption (the
#       figures BENCHMARKS.md quotes when the machine was shared);
#       threads=0 (all cores), cputime=0: wall time, for a quiet machine.
#  2. MODEL=1 (default): GPT-2 124M for R rounds, each round the training
#     step (B=4 T=64, `bench train --precision fp32,bf16`: both in one
#     process, interleaved) and prefill / decode tok/s (`bench generate`,
#     fp32 then bf16), then the medians over rounds and the bf16/fp32 ratios.
set -euo pipefail
G=${1:-build/gpt2c}
R=${R:-3}
T=${THREADS:-1}
CT=${CPUTIME:-1}
extra=()
[ "$CT" = 1 ] && extra+=(--cpu-time)
lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:|Stepping|^CPU\(s\)" || true
uptime
if [ "${GEMM:-1}" = 1 ]; then
  "$G" bench peak --threads "$T" --remeasure
  for r in $(seq "$R"); do
    echo "== gemm round $r"
    "$G" bench gemm --precision fp32 --threads "$T" --n "${NS:-256}" --reps "${REPS:-5}" "${extra[@]}"
    "$G" bench gemm --precision bf16 --threads "$T" --n "${NS:-256}" --reps "${REPS:-5}" "${extra[@]}"
  done
fi
if [ "${MODEL:-1}" = 1 ]; then
  MT=${MODEL_THREADS:-0}   # 0: all cores
  J=$(mktemp)
  trap 'rm -f "$J"' EXIT
  for r in $(seq "$R"); do
    echo "== model round $r"
    "$G" bench train --model gpt2 --batch 4 --seq 64 --steps "${STEPS:-3}" --warmup 1 --threads "$MT" \
      --precision fp32,bf16 --json | tee -a "$J"
    for p in fp32 bf16; do
      "$G" bench generate --model gpt2 --prompt-len "${PROMPT:-128}" --tokens "${TOKENS:-32}" --runs 3 --threads "$MT" \
        --precision $p --json | sed "s/^{/{\"round\":$r,/" | tee -a "$J"
    done
  done
  python3 - "$J" <<'PY'
import json, statistics, sys
train = {"fp32": [], "bf16": []}; cpu = {"fp32": [], "bf16": []}; pre = {"fp32": [], "bf16": []}; dec = {"fp32": [], "bf16": []}; mem = {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "results" in o:
        for r in o["results"]:
            train[r["precision"]].append(r["median_ms"]); cpu[r["precision"]].append(r["cpu_ms_per_step"])
    else:
        p = "bf16" if o["format"] == "bf16" else "fp32"
        pre[p].append(o["prefill_tok_s"]); dec[p].append(o["decode_tok_s"]); mem[p] = o["weights_resident_mb"]
med = lambda x: statistics.median(x) if x else float("nan")
print("\nGPT-2 124M, medians of %d rounds            fp32        bf16   bf16/fp32" % len(train["fp32"]))
print("training step B=4 T=64 (ms)   %10.1f  %10.1f   %.2fx time" % (med(train["fp32"]), med(train["bf16"]), med(train["bf16"]) / med(train["fp32"])))
print("training step, CPU ms/step    %10.1f  %10.1f   %.2fx time (process CPU time, all threads)" % (med(cpu["fp32"]), med(cpu["bf16"]), med(cpu["bf16"]) / med(cpu["fp32"])))
print("prefill (tok/s)               %10.1f  %10.1f   %.2fx speed" % (med(pre["fp32"]), med(pre["bf16"]), med(pre["bf16"]) / med(pre["fp32"])))
print("decode (tok/s)                %10.1f  %10.1f   %.2fx speed" % (med(dec["fp32"]), med(dec["bf16"]), med(dec["bf16"]) / med(dec["fp32"])))
print("weights resident (MB)         %10.1f  %10.1f   %.2fx" % (mem.get("fp32", 0), mem.get("bf16", 0), mem.get("bf16", 0) / max(mem.get("fp32", 1), 1e-9)))
PY
fi
