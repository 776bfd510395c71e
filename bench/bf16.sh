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
#     Training runs at B=4 and each T of SEQS (default "64 256 1024"; STEPS
#     timed steps after 1 warm-up, default 3, 1 at T >= 1024), and, when
#     torch imports (TORCH=0 skips it), the PyTorch CPU baseline
#     tools/reference/bench_pytorch_cpu.py, fp32 then bf16, at the same B, T
#     and threads (TORCH_STEPS timed steps, default 2, 1 at T >= 1024), in its
#     tuned recipe (TORCH_RECIPE=plain: PyTorch as installed; the variants are
#     compared in bench/pytorch_cpu.sh; TORCH_PRECISIONS=fp32 skips PyTorch's
#     bf16, whose compile takes minutes on 2 cores).  The
#     summary gives per T: fp32 and bf16 ms, bf16/fp32, fp32 as % of the
#     fp32 FMA peak (bench train's analytic FLOPs), gpt2c/PyTorch, and the
#     update's ms per round beside the memory's update stream measured around
#     each configuration's steps (`bench train --mem-probe`): a round whose
#     update is slow with the memory slow is the host, not the code.
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
  # the GEMM blockings the model runs use (tuned now unless cached: not inside
  # a timed run), and whether each tune was kept or refused under load
  for p in fp32 bf16; do
    "$G" bench gemm --precision $p --threads "$MT" --n 16 --reps 1 --no-blas --no-local-peak | grep -i blocking || true
  done
  for r in $(seq "$R"); do
    echo "== model round $r"
    if [ "${TRAIN:-1}" = 1 ]; then
      for sq in ${SEQS:-64 256 1024}; do
        st=${STEPS:-3}; [ -z "${STEPS:-}" ] && [ "$sq" -ge 1024 ] && st=1
        "$G" bench train --model gpt2 --batch 4 --seq "$sq" --steps "$st" --warmup 1 --threads "$MT" \
          --precision fp32,bf16 --mem-probe --json | tee -a "$J"
        TP=$(dirname "$0")/../tools/reference/bench_pytorch_cpu.py
        if [ "${TORCH:-1}" = 1 ] && [ -f "$TP" ] && python3 -c "import torch" 2>/dev/null; then
          ts=${TORCH_STEPS:-2}; [ -z "${TORCH_STEPS:-}" ] && [ "$sq" -ge 1024 ] && ts=1
          tt=$MT; [ "$tt" = 0 ] && tt=$(nproc)
          for p in ${TORCH_PRECISIONS:-fp32 bf16}; do
            python3 "$TP" --batch 4 --seq "$sq" --steps "$ts" --warmup 1 --threads "$tt" --precision $p \
              --recipe "${TORCH_RECIPE:-tuned}" | tee -a "$J" || true
          done
        fi
      done
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
train = {}; cpu = {}; gf = {}; torch = {}; mem = {}; upd = {}; bw = {}  # training: (T, precision) -> values
inf = {}  # (what, precision) -> values: prefill at each P (batch 1), decode at each batch (P=128)
timing = "wall"
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "results" in o:
        for r in o["results"]:
            k = (o["seq"], r["precision"])
            train.setdefault(k, []).append(r["median_ms"]); cpu.setdefault(k, []).append(r["cpu_ms_per_step"])
            gf.setdefault(k, []).append(100 * r["gflops"] / r["peak_gflops"] if r["peak_gflops"] > 0 else float("nan"))
            upd.setdefault(k, []).append(r["update_ms"])
            if r.get("mem_update_gb_per_s"): bw.setdefault(k, []).append(r["mem_update_gb_per_s"])
    elif "impl" in o:
        torch.setdefault((o["T"], o["precision"]), []).append(o["ms_per_step_median"])
    else:
        p = "bf16" if o["format"] == "bf16" else "fp32"
        if o.get("cpu_time"): timing = "process CPU time"
        if o["batch"] == 1: inf.setdefault(("prefill P=%d (tok/s)" % o["prompt_len"], p), []).append(o["prefill_tok_s"])
        if o["tokens"] > 2: inf.setdefault(("decode batch %d (tok/s)" % o["batch"], p), []).append(o["decode_tok_s"])
        mem[p] = o["weights_resident_mb"]; threads = o["threads"]
med = lambda x: statistics.median(x) if x else float("nan")
print("\nGPT-2 124M, medians of %d rounds            fp32        bf16   bf16/fp32" % max([len(v) for v in train.values()] + [len(inf.get(("prefill P=128 (tok/s)", "fp32"), []))]))
for sq in sorted({k[0] for k in train}):
    f, b = med(train.get((sq, "fp32"), [])), med(train.get((sq, "bf16"), []))
    print("training step B=4 T=%-4d (ms) %10.1f  %10.1f   %.2fx time; fp32 %.1f%% of the fp32 peak, bf16 %.1f%% of the bf16 ceiling (vdpbf16ps, or the FMA peak without AVX512_BF16)" % (sq, f, b, b / f, med(gf.get((sq, "fp32"), [])), med(gf.get((sq, "bf16"), []))))
    cf, cb = med(cpu.get((sq, "fp32"), [])), med(cpu.get((sq, "bf16"), []))
    print("  CPU ms/step                 %10.1f  %10.1f   %.2fx time (process CPU time, all threads)" % (cf, cb, cb / cf))
    # the memory-bound update beside the memory's rate while each ran (rounds in brackets): a slow round's cause
    rounds = lambda d, k, f: ", ".join(f % x for x in d.get(k, []))
    print("  update ms (rounds)          %10.1f  %10.1f   fp32 [%s], bf16 [%s]; memory update stream GB/s: fp32 [%s], bf16 [%s]" % (
        med(upd.get((sq, "fp32"), [])), med(upd.get((sq, "bf16"), [])), rounds(upd, (sq, "fp32"), "%.0f"),
        rounds(upd, (sq, "bf16"), "%.0f"), rounds(bw, (sq, "fp32"), "%.0f"), rounds(bw, (sq, "bf16"), "%.0f")))
    tf, tb = med(torch.get((sq, "fp32"), [])), med(torch.get((sq, "bf16"), []))
    if torch.get((sq, "fp32")) or torch.get((sq, "bf16")):
        print("  PyTorch CPU (ms)            %10.1f  %10.1f   gpt2c/PyTorch: fp32 %.2fx, bf16 %.2fx time" % (tf, tb, f / tf, b / tb))
for what in sorted({w for w, _ in inf}, key=lambda w: (w[0] != "p", int(re.findall(r"\d+", w)[0]))):
    a, b = med(inf.get((what, "fp32"), [])), med(inf.get((what, "bf16"), []))
    print("%-29s %10.1f  %10.1f   %.2fx speed" % (what, a, b, b / a))
if inf: print("(inference: %s, %s threads)" % (timing, threads))
print("weights resident (MB)         %10.1f  %10.1f   %.2fx" % (mem.get("fp32", 0), mem.get("bf16", 0), mem.get("bf16", 0) / max(mem.get("fp32", 1), 1e-9)))
PY
fi
