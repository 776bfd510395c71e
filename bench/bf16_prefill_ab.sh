#!/usr/bin/env bash
# bf16 / fp32 prefill before/after: two builds (OLD, NEW), GPT-2 124M random
# weights, `bench generate` prefill at P=512 and P=128, every case run by both
# builds back to back (interleaved), R rounds, medians; prints CPU family/model.
#   THREADS=2 (default): wall time;  THREADS=1: process CPU time (survives load)
#   BF16_BLOCKING="kc mc nc": both builds run this bf16 blocking (a private
#   copy of the GEMM cache, both builds' keys rewritten), so the drivers are
#   compared and not their autotunes' choices; unset: each build's cached tune.
# Usage: bench/bf16_prefill_ab.sh OLD/gpt2c NEW/gpt2c   (R=5)
set -u
OLD=$1; NEW=$2; R=${R:-5}; T=${THREADS:-2}; PL=${PLENS:-512 128}
J=$(mktemp); C=$(mktemp -d); trap 'rm -rf "$J" "$C"' EXIT
CT=""; [ "$T" = 1 ] && CT=--cpu-time
mkdir -p "$C/gpt2c"; cp ~/.cache/gpt2c/*.json "$C/gpt2c/" 2>/dev/null
if [ -n "${BF16_BLOCKING:-}" ]; then
  python3 - "$C/gpt2c/gemm.json" $BF16_BLOCKING <<'PY'
import json, sys
f, kc, mc, nc = sys.argv[1], *map(int, sys.argv[2:5])
d = json.load(open(f))
for k in list(d.get("bf16", {})):
    if "build=Release" in k and "asan" not in k: d["bf16"][k].update(kc=kc, mc=mc, nc=nc)
json.dump(d, open(f, "w"), indent=1)
PY
fi
export XDG_CACHE_HOME=$C
lscpu | grep -E "Model name|CPU family|^Model:|Stepping"; uptime
echo "threads $T ${CT:-wall}, rounds $R, bf16 blocking ${BF16_BLOCKING:-as tuned}"
# one warm-up each (first-use tune if the cache lacks the key)
for g in OLD NEW; do ${!g} bench generate --prompt-len 64 --tokens 1 --runs 1 --threads $T --precision bf16 --no-peak --json >/dev/null; done
for r in $(seq $R); do
  for P in $PL; do
    for p in fp32 bf16; do
      ord="OLD NEW"; [ $((r % 2)) = 0 ] && ord="NEW OLD" # the order flips every round (second runs were seen slower)
      for g in $ord; do
        bin=${!g}
        $bin bench generate --model gpt2 --prompt-len $P --tokens 1 --runs 1 --threads $T --precision $p $CT --no-peak --json | sed "s/^{/{\"build\":\"$g\",/" >> $J
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
    d.setdefault((o["prompt_len"], p, o["build"]), []).append(o["prefill_tok_s"])
m = lambda k: statistics.median(d[k])
print("%-8s %9s %9s %9s %9s  %9s %9s  %s" % ("prefill", "fp32 old", "fp32 new", "bf16 old", "bf16 new", "fp32 n/o", "bf16 n/o", "bf16/fp32 old -> new"))
for P in sorted({k[0] for k in d}, reverse=True):
    a, b, c, e = m((P, "fp32", "OLD")), m((P, "fp32", "NEW")), m((P, "bf16", "OLD")), m((P, "bf16", "NEW"))
    print("P=%-6d %9.1f %9.1f %9.1f %9.1f  %8.3fx %8.3fx  %.2fx -> %.2fx" % (P, a, b, c, e, b / a, e / c, c / a, e / b))
PY
