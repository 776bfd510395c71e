#!/usr/bin/env bash
# The PyTorch CPU baseline (tools/reference/bench_pytorch_cpu.py) in each of
# its variants against gpt2c's training step (issue 12), GPT-2 124M, B=4,
# one interleaved sitting.
# Usage: bench/pytorch_cpu.sh [path/to/gpt2c]   (default build/gpt2c)
# Each of R rounds (default 3) runs `gpt2c bench train --precision fp32,bf16`
# then every PyTorch variant, each in its own process (STEPS timed steps after
# 1 warm-up, default 3), so a shared machine's load hits all alike; the
# summary gives per variant the median over rounds of the per-run median
# step, wall and process CPU time (all threads), and gpt2c/PyTorch.
#   THREADS (default 2)  threads of both (torch.set_num_threads, --threads)
#   SEQ (default 64)     T
#   VARIANTS             replaces the list: lines "label|ENV=V ...|script args"
# The tuned variants compile (torch.compile) in their warm-up step: 1-2.5
# minutes on 2 cores the first time, ~15 s once inductor's disk cache has them.
set -euo pipefail
G=${1:-build/gpt2c}
R=${R:-3}
T=${THREADS:-2}
S=${SEQ:-64}
ST=${STEPS:-3}
TP=$(dirname "$0")/../tools/reference/bench_pytorch_cpu.py
lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:|Stepping|^CPU\(s\)" || true
python3 -c "import torch; print('torch', torch.__version__)"
uptime
DEFAULT="plain fp32||--recipe plain --precision fp32
plain fp32, oneDNN linears||--recipe plain --precision fp32 --linear onednn
plain fp32, MKL Intel path||--recipe plain --precision fp32 --mkl-amd on
tuned fp32 (MKL Intel path, compiled)||--precision fp32
plain bf16||--recipe plain --precision bf16
tuned bf16 (compiled)||--precision bf16"
V=${VARIANTS:-$DEFAULT}
J=$(mktemp)
trap 'rm -f "$J"' EXIT
for r in $(seq "$R"); do
  echo "== round $r"
  "$G" bench train --model gpt2 --batch 4 --seq "$S" --steps "$ST" --warmup 1 --threads "$T" \
    --precision fp32,bf16 --json | tee -a "$J"
  while IFS='|' read -r label envs args; do
    [ -z "$label" ] && continue
    # shellcheck disable=SC2086  # envs and args are word lists
    out=$(env $envs python3 "$TP" --batch 4 --seq "$S" --steps "$ST" --warmup 1 --threads "$T" $args 2>/dev/null | tail -1) || true
    if [ -n "$out" ]; then echo "{\"label\":\"$label\",${out#\{}" | tee -a "$J"; fi
  done <<< "$V"
done
python3 - "$J" <<'PY'
import json, statistics, sys
g, t = {}, {}
for line in open(sys.argv[1]):
    o = json.loads(line)
    if "results" in o:
        for r in o["results"]:
            g.setdefault(r["precision"], []).append((r["median_ms"], r["cpu_ms_per_step"]))
    elif "label" in o:
        t.setdefault(o["label"], []).append((o["ms_per_step_median"], o["cpu_ms_per_step_median"], o["precision"]))
med = lambda v: statistics.median(v) if v else float("nan")
print("\nGPT-2 124M training step, medians over rounds     wall ms   CPU ms   gpt2c/PyTorch (wall, CPU)")
for p in ("fp32", "bf16"):
    print("%-46s %9.1f %8.1f" % ("gpt2c " + p, med([a for a, _ in g.get(p, [])]), med([b for _, b in g.get(p, [])])))
for label, v in t.items():
    w, c, p = med([a for a, _, _ in v]), med([b for _, b, _ in v]), v[0][2]
    gw, gc = med([a for a, _ in g.get(p, [])]), med([b for _, b in g.get(p, [])])
    print("%-46s %9.1f %8.1f   %.2fx, %.2fx" % ("PyTorch " + label, w, c, gw / w, gc / c))
PY
