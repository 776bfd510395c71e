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
#     process, interleaved; TRAIN=0 skips it) and inference (`bench
#     generate`, fp32 then bf16 back to back for each case): prefill of a
#     P=128 and a P=512 prompt (one pass), decode at batch 1 and batch 8
#     (greedy steps after a P=128 prompt); then the medians over rounds and
#     the bf16/fp32 ratios.  MODEL_THREADS=N (default 0: all cores) sets the
#     threads; MODEL_THREADS=1 with CPUTIME=1 times inference by process CPU
#     time (immune to preemption on a shared machine).
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
  gextra=()
  [ "$CT" = 1 ] && [ "$MT" = 1 ] && gextra+=(--cpu-time)
  J=$(mktemp)
  trap 'rm -f "$J"' EXIT
  for r in $(seq "$R"); do
    echo "== model round $r"
    if [ "${TRAIN:-1}" = 1 ]; then
      "$G" bench train --model gpt2 --batch 4 --seq 64 --steps "${STEPS:-3}" --warmup 1 --threads "$MT" \
        --precision fp32,bf16 --json | tee -a "$J"
    fi
    # inference cases: "prompt batch tokens" (P=128 b1: prefill 128 + decode b1; P=512: prefill 512; b8: decode b8)
    for case in "128 1 ${TOKENS:-32}" "512 1 2" "128 8 ${TOKENS:-32}"; do
      set -- $case
      for p in fp32 bf16; do
        "$G" bench generate --model gpt2 --prompt-len "$1" --batch "$2" --tokens "$3" --runs 3 --threads "$MT" \
          --precision $p --no-peak "${gextra[@]}" --json | sed "s/^{/{\"round\":$r,/" | tee -a "$J"
      done
    done
  done
  python3 - "$J" <<'PY'
import json, re, statistics, sys
train = {"fp32": [], "bf16": []}; cpu = {"fp32": [], "bf16": []}; mem = {}
inf = {}  # (what, precision) -> values: prefill at each P (batch 1), decode at each batch (P=128)
timing = "wall"
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "results" in o:
        for r in o["results"]:
            train[r["precision"]].append(r["median_ms"]); cpu[r["precision"]].append(r["cpu_ms_per_step"])
    else:
        p = "bf16" if o["format"] == "bf16" else "fp32"
        if o.get("cpu_time"): timing = "process CPU time"
        if o["batch"] == 1: inf.setdefault(("prefill P=%d (tok/s)" % o["prompt_len"], p), []).append(o["prefill_tok_s"])
        if o["tokens"] > 2: inf.setdefault(("decode batch %d (tok/s)" % o["batch"], p), []).append(o["decode_tok_s"])
        mem[p] = o["weights_resident_mb"]; threads = o["threads"]
med = lambda x: statistics.median(x) if x else float("nan")
print("\nGPT-2 124M, medians of %d rounds            fp32        bf16   bf16/fp32" % max(len(train["fp32"]), len(inf.get(("prefill P=128 (tok/s)", "fp32"), []))))
if train["fp32"]:
    print("training step B=4 T=64 (ms)   %10.1f  %10.1f   %.2fx time" % (med(train["fp32"]), med(train["bf16"]), med(train["bf16"]) / med(train["fp32"])))
    print("training step, CPU ms/step    %10.1f  %10.1f   %.2fx time (process CPU time, all threads)" % (med(cpu["fp32"]), med(cpu["bf16"]), med(cpu["bf16"]) / med(cpu["fp32"])))
for what in sorted({w for w, _ in inf}, key=lambda w: (w[0] != "p", int(re.findall(r"\d+", w)[0]))):
    a, b = med(inf.get((what, "fp32"), [])), med(inf.get((what, "bf16"), []))
    print("%-29s %10.1f  %10.1f   %.2fx speed" % (what, a, b, b / a))
if inf: print("(inference: %s, %s threads)" % (timing, threads))
print("weights resident (MB)         %10.1f  %10.1f   %.2fx" % (mem.get("fp32", 0), mem.get("bf16", 0), mem.get("bf16", 0) / max(mem.get("fp32", 1), 1e-9)))
PY
fi
