#!/usr/bin/env bash
# The GEMM autotune and the bench-gemm harness, A/B against an older build
# (issue 12, helper "tune"), one interleaved sitting:
#  1. each build's own bf16 and fp32 autotunes (`bench gemm --autotune`;
#     the lines say whether the tune was kept or refused under load);
#  2. R rounds, builds alternating: bf16 prefill of a P-token prompt
#     (`bench generate --precision bf16 --tokens 1`), then, for each build,
#     `bench gemm --precision bf16` at N rows with and without the local-peak
#     bursts (same process settings), so the bursts' cost to the GEMM next to
#     them shows as the ratio of the two;
#  3. medians over rounds and the ratios.
# Usage: bench/tune_ab.sh NEW_GPT2C OLD_GPT2C
#   env: R rounds (3), P prompt tokens (512), N GEMM rows (512), THREADS (1),
#        CPUTIME (1: process CPU time, immune to preemption with THREADS=1),
#        OUT (out/tune_ab).  Needs python3 for the summary.
set -euo pipefail
NEW=${1:?new gpt2c}
OLD=${2:?old gpt2c}
R=${R:-3}
P=${P:-512}
N=${N:-512}
T=${THREADS:-1}
OUT=${OUT:-out/tune_ab}
mkdir -p "$OUT"
ct=(); [ "${CPUTIME:-1}" = 1 ] && ct=(--cpu-time)
{ lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:|Stepping|^CPU\(s\)" || true; uptime; } | tee "$OUT/machine.txt"
for w in new old; do
  G=$NEW; [ $w = old ] && G=$OLD
  for p in bf16 fp32; do
    echo "$w $p: $("$G" bench gemm --precision $p --threads "$T" --n 16 --reps 1 --no-blas --no-local-peak --autotune | grep -i blocking)"
  done
done | tee "$OUT/blocking.txt"
for r in $(seq "$R"); do
  for w in new old; do
    G=$NEW; [ $w = old ] && G=$OLD
    "$G" bench generate --precision bf16 --prompt-len "$P" --tokens 1 --runs 3 --threads "$T" "${ct[@]}" --json --no-peak \
      > "$OUT/prefill.$w.$r.json"
    for lp in local nolocal; do
      f=(); [ $lp = nolocal ] && f=(--no-local-peak)
      "$G" bench gemm --json --precision bf16 --threads "$T" --n "$N" --reps 5 --no-blas "${ct[@]}" "${f[@]}" \
        > "$OUT/gemm.$w.$lp.$r.json"
    done
  done
done
python3 - "$OUT" "$R" <<'PY'
import json, sys, statistics as st
out, R = sys.argv[1], int(sys.argv[2])
def med(f): return st.median(f(r) for r in range(1, R + 1))
pre = {w: med(lambda r: json.load(open(f"{out}/prefill.{w}.{r}.json"))["prefill_tok_s"]) for w in ("new", "old")}
print(f"bf16 prefill tok/s (median of {R} rounds): new {pre['new']:.1f}, old {pre['old']:.1f}, new/old {pre['new']/pre['old']:.3f}")
for w in ("new", "old"):
    g = {}
    for lp in ("local", "nolocal"):
        for r in range(1, R + 1):
            for x in json.load(open(f"{out}/gemm.{w}.{lp}.{r}.json"))["results"]:
                g.setdefault((x["N"], x["IC"], x["OC"], x["op"], lp), []).append(x["cpu_gflops"])
    ratios = [st.median(g[k]) / st.median(g[k[:4] + ("nolocal",)]) for k in g if k[4] == "local"]
    tot = {lp: sum(st.median(v) for k, v in g.items() if k[4] == lp) for lp in ("local", "nolocal")}
    print(f"{w}: bf16 GEMM GFLOP/s with bursts / without, per shape: median {st.median(ratios):.3f} "
          f"(range {min(ratios):.3f}-{max(ratios):.3f}, {len(ratios)} GEMMs); sum of GFLOP/s with/without {tot['local']/tot['nolocal']:.3f}")
PY
