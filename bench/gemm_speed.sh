#!/usr/bin/env bash
# GEMM speed on GPT-2 124M's shapes as % of the measured peak (issue 12,
# must-have 3): fp32 and bf16, forward / dinp / dweight of qkv, attn-proj,
# fc, fc-proj and the LM head, B*T = 256 and 1024; optionally against an
# older build ("before"), runs interleaved round by round so a shared
# machine's load hits both alike; the medians of the rounds are tabled.
# Usage: bench/gemm_speed.sh [NEW_GPT2C] [BEFORE_GPT2C]
#   env: THREADS (default 0 = all cores), R rounds (3), REPS per GEMM (5),
#        NS (256,1024), CPUTIME=1 (process CPU time: use with THREADS=1 on a
#        shared machine), OUT (raw JSON, default out/gemm_speed),
#        SUMMARY_ONLY=1 (table the JSON already in OUT, run nothing)
# Two "% of peak" figures per shape: of the peak `bench peak` measured at the
# start of the sitting (the new build's, for both builds), and of the "local"
# peak, which `bench gemm` measures in short FMA / vdpbf16ps bursts around
# each GEMM -- a burst phase, then >= 100 ms of untimed warm-up runs, then the
# timed runs, then the next burst phase (same threads; the median of the
# bursts on both sides).  The bursts never run right before a timed run: one
# there cost the GEMM a few per cent (builds before this harness change did
# that, so compare old builds by "% peak" or GFLOP/s, or with
# --no-local-peak).  On a VM whose speed moves 2x within seconds the local
# figure is the robust one, and it is the one the summary lines use.  Builds
# without the local peak show "-" there.  The autotune lines (blocking.txt)
# say whether each tune was kept or refused as timed on a loaded machine.
# Needs python3 for the summary table only.
set -euo pipefail
NEW=${1:-build/gpt2c}
OLD=${2:-}
T=${THREADS:-0}
R=${R:-3}
OUT=${OUT:-out/gemm_speed}
mkdir -p "$OUT"
if [ "${SUMMARY_ONLY:-0}" != 1 ]; then
extra=()
[ "${CPUTIME:-0}" = 1 ] && extra+=(--cpu-time)
{ lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:|Stepping|^CPU\(s\)|L2|L3" || true; uptime; } | tee "$OUT/machine.txt"
# peaks first (all threads for bandwidth; FMA on the thread count used below)
"$NEW" bench peak --threads "$T" --remeasure | tee "$OUT/peak.txt"
"$NEW" --version | grep BLAS | tee -a "$OUT/machine.txt" || true
# the autotunes (fp32 and bf16 blocking) run once before timing, each
# build its own (cached per CPU signature; a build without the fp32
# autotune ignores that flag for fp32)
for G in "$NEW" ${OLD:+"$OLD"}; do
  for p in fp32 bf16; do
    "$G" bench gemm --precision $p --threads "$T" --n 16 --reps 1 --no-blas --autotune | grep -i blocking || true
  done
done | tee "$OUT/blocking.txt"
for r in $(seq "$R"); do
  for p in fp32 bf16; do
    for which in new old; do
      G=$NEW; [ "$which" = old ] && G=$OLD
      [ -n "$G" ] || continue
      b=(); [ "$which" = old ] && b=(--no-blas) # the BLAS column once, from the new build
      "$G" bench gemm --json --precision $p --threads "$T" --n "${NS:-256,1024}" --reps "${REPS:-5}" "${b[@]}" "${extra[@]}" \
        > "$OUT/$which.$p.$r.json"
    done
  done
done
fi
python3 - "$OUT" "$R" <<'PY'
import json, sys, statistics as st, glob, os
out, R = sys.argv[1], int(sys.argv[2])
names = {(768, 2304): "qkv", (768, 768): "attn-proj", (768, 3072): "fc", (3072, 768): "fc-proj", (768, 50304): "lm-head"}
def load(which, p):
    runs = [json.load(open(f)) for f in sorted(glob.glob(f"{out}/{which}.{p}.*.json"))]
    if not runs: return None, {}, ""
    peak = st.median(r["peak_gflops"] for r in runs)
    note = runs[0].get("blas_bf16", "") if p == "bf16" else runs[0].get("blas", "")
    d = {}
    for r in runs:
        for x in r["results"]:
            d.setdefault((x["N"], x["IC"], x["OC"], x["op"]), []).append(x)
    return peak, d, note
for p in ("fp32", "bf16"):
    pn, dn, note = load("new", p)
    po, do, _ = load("old", p)
    if not dn: continue
    print(f"\n### {p}: GFLOP/s (median of {R} rounds); % of the local peak (median over rounds) and of the sitting's peak ({pn:.1f} GFLOP/s)")
    if note: print(f"BLAS ({p}): {note}\n")
    hdr = "| B*T | layer | op | after GFLOP/s | after % local peak | after % peak |"
    if do: hdr += " before GFLOP/s | before % local peak | after/before |"
    if p == "fp32": hdr += " OpenBLAS GFLOP/s | % local peak | % peak |"
    print(hdr); print("|" + "---|" * (hdr.count("|") - 1))
    def loc(xs, key):
        v = [x[key] for x in xs if key in x]
        return st.median(v) if v else None
    def f(v): return "-" if v is None else f"{v:.1f}"
    summ = {"new": [], "old": [], "blas": []}
    for k, xs in dn.items():
        g, lp = st.median(x["cpu_gflops"] for x in xs), loc(xs, "cpu_pct_local_peak")
        summ["new"].append(lp if lp is not None else 100 * g / pn)
        row = f"| {k[0]} | {names.get((k[1], k[2]), k[1:3])} | {k[3]} | {g:.1f} | {f(lp)} | {100*g/pn:.1f} |"
        if do and k in do:
            go, lo = st.median(x["cpu_gflops"] for x in do[k]), loc(do[k], "cpu_pct_local_peak")
            summ["old"].append(lo if lo is not None else 100 * go / pn)
            row += f" {go:.1f} | {f(lo)} | {g/go:.2f} |"
        if p == "fp32":
            b = [x["blas_gflops"] for x in xs if "blas_gflops" in x]
            bl = loc(xs, "blas_pct_local_peak")
            if b: summ["blas"].append(bl if bl is not None else 100 * st.median(b) / pn)
            row += f" {st.median(b):.1f} | {f(bl)} | {100*st.median(b)/pn:.1f} |" if b else " - | - | - |"
        print(row)
    for w, v in summ.items():
        if v:
            print(f"\n{p} {w}: % of peak (local where measured) {min(v):.1f}-{max(v):.1f}, median {st.median(v):.1f}, "
                  f"{sum(x >= 85 for x in v)} of {len(v)} shapes >= 85%", end="")
    print()
PY
