#!/usr/bin/env bash
# Training step by phase and op, old vs new binary, from `gpt2c profile`
# (GPT-2 124M, B=4, 2 threads, 4 trials per run, min over trials): R rounds
# (default 8), old and new alternated with the order flipped every round;
# prints each run's step / forward / backward / optimizer / AdamW / matmul ms
# and the median over rounds of the per-round new/old ratios, which a VM
# whose speed moves between runs disturbs less than a ratio of medians.
#   bench/profile_ab.sh OLD_GPT2C NEW_GPT2C     (P=fp32|bf16, T=64, R=8)
set -euo pipefail
OLD=${1:?old gpt2c}; NEW=${2:?new gpt2c}; R=${R:-8}; P=${P:-fp32}; T=${T:-64}
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
lscpu | grep -E "Vendor ID|CPU family|^Model:|Stepping|Model name" | tr -s ' '
echo "precision $P, B=4 T=$T, 2 threads, $R rounds"
for r in $(seq "$R"); do
  for w in 0 1; do
    if [ $(((r + w) % 2)) = 0 ]; then b=old; bin=$OLD; else b=new; bin=$NEW; fi
    "$bin" profile --model gpt2 --batch 4 --seq "$T" --trials 4 --warmup 1 --threads 2 --precision "$P" \
      --no-peak --no-counters --quiet --out "$W/$b" >/dev/null 2>&1
    python3 - "$W/$b/summary.json" "$b" "$r" >>"$W/runs" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ms = lambda x: x["ms"]["min"]
row = {"step": ms(d["step"]), **{k: ms(v) for k, v in d["phases"].items() if k != "data"},
       **{k: ms(d["ops"][k]) for k in ("adamw", "attention", "layernorm", "matmul_lmhead", "matmul_fc", "matmul_fcproj", "matmul_qkv")}}
print(json.dumps({"bin": sys.argv[2], "round": int(sys.argv[3]), **row}))
PY
  done
done
python3 - "$W/runs" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
keys = [k for k in runs[0] if k not in ("bin", "round")]
for r in runs: print(r["bin"], r["round"], " ".join(f"{k} {r[k]:.1f}" for k in keys))
by = {}
for r in runs: by.setdefault(r["round"], {})[r["bin"]] = r
print("| | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys))
print("| median new/old | " + " | ".join(f"{statistics.median(v['new'][k] / v['old'][k] for v in by.values()):.3f}" for k in keys) + " |")
print("| min old | " + " | ".join(f"{min(v['old'][k] for v in by.values()):.1f}" for k in keys) + " |")
print("| min new | " + " | ".join(f"{min(v['new'][k] for v in by.values()):.1f}" for k in keys) + " |")
PY
