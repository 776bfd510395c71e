#!/usr/bin/env bash
# Inference before/after: two builds (OLD, NEW), GPT-2 124M, fp32 and bf16,
# prefill P=128 / P=512 and decode batch 1 / 8 (`bench generate`), every
# case run by both builds back to back (interleaved), R rounds, medians.
# 1 thread, process CPU time: survives a shared machine's load.
# Usage: bench/infer_ab.sh OLD/gpt2c NEW/gpt2c   (R=3; both builds need `bench generate --cpu-time`)
set -u
OLD=$1; NEW=$2; R=${R:-3}
J=$(mktemp); trap 'rm -f "$J"' EXIT
lscpu | grep -E "Model name|CPU family|^Model:|Stepping"; uptime
for r in $(seq $R); do
  for case in "128 1 16" "512 1 2" "128 8 12"; do
    set -- $case
    for p in fp32 bf16; do
      for g in OLD NEW; do
        bin=${!g}
        $bin bench generate --model gpt2 --prompt-len $1 --batch $2 --tokens $3 --runs 3 --threads 1 --precision $p --cpu-time --no-peak --json | sed "s/^{/{\"build\":\"$g\",/" >> $J
      done
    done
  done
done
uptime
python3 - $J <<'PY'
import json, statistics, sys
d = {}
for l in open(sys.argv[1]):
    o = json.loads(l); p = "bf16" if o["format"] == "bf16" else "fp32"
    if o["batch"] == 1: d.setdefault(("prefill P=%d" % o["prompt_len"], p, o["build"]), []).append(o["prefill_tok_s"])
    if o["tokens"] > 2: d.setdefault(("decode b%d" % o["batch"], p, o["build"]), []).append(o["decode_tok_s"])
m = lambda k: statistics.median(d[k])
print("%-14s %9s %9s %9s %9s   %s" % ("tok/s (CPU)", "fp32 old", "fp32 new", "bf16 old", "bf16 new", "bf16/fp32 old -> new"))
for w in ["prefill P=128", "prefill P=512", "decode b1", "decode b8"]:
    a, b, c, e = m((w, "fp32", "OLD")), m((w, "fp32", "NEW")), m((w, "bf16", "OLD")), m((w, "bf16", "NEW"))
    print("%-14s %9.1f %9.1f %9.1f %9.1f   %.2fx -> %.2fx" % (w, a, b, c, e, c / a, e / b))
PY
