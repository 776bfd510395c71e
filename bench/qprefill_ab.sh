#!/usr/bin/env bash
# Quantized prefill (issue 13, qprefill): prefill tok/s of GPT-2 124M (random weights, quantized on load) at
# P tokens, interleaved in one script (every variant once per repeat, so a busy moment of a shared machine hits
# them alike); medians over REPS and per-repeat ratios.  Variants: fp32, bf16 precision, q8 / q4 / nf4 with
# the default prefill (bf16 GEMM where AVX512_BF16 runs) and with --quant-act f32 (the exact fp32 path);
# with BASE_BUILD also q8 / q4 / nf4 of that build (before / after); KVF32_FMTS (default q4) also with an fp32
# KV cache (quantized weights default to a bf16 cache, whose prefill attention is slower than fp32's; the
# bf16-weights variant has an fp32 cache).
# MODE=cpu (default): 1 thread, process CPU time (immune to preemption); MODE=wall: THREADS threads (default 2).
# Usage: bench/qprefill_ab.sh NEW_BUILD [BASE_BUILD] [OUT]   (REPS=3 P=512 FMTS="q8 q4 nf4")
set -eu
NEW="$1/gpt2c"; BASE="${2:+$2/gpt2c}"; OUT="${3:-out/bench_qprefill_ab}"
mkdir -p "$OUT"; rm -f "$OUT"/ab.jsonl
{ lscpu | grep -E "Vendor ID|CPU family|Model:|Model name" | tr -s ' '; uptime; } | tee "$OUT/machine.txt"
if [ "${MODE:-cpu}" = cpu ]; then T=(--threads 1 --cpu-time); else T=(--threads "${THREADS:-2}"); fi
run() { # name binary args...
  local name="$1" g="$2"; shift 2
  "$g" bench generate --model gpt2 "$@" "${T[@]}" --prompt-len "${P:-512}" --tokens 2 --runs 1 --no-peak --json \
    | sed "s/^{/{\"rep\":$rep,\"variant\":\"$name\",/" >> "$OUT/ab.jsonl"
}
for rep in $(seq "${REPS:-3}"); do
  run f32 "$NEW"
  run bf16 "$NEW" --precision bf16
  for f in ${FMTS:-q8 q4 nf4}; do
    run "$f" "$NEW" --quant "$f"
    run "$f-f32" "$NEW" --quant "$f" --quant-act f32
    if [ -n "$BASE" ]; then run "$f-base" "$BASE" --quant "$f"; fi
  done
  for f in ${KVF32_FMTS-q4}; do run "$f-kvf32" "$NEW" --quant "$f" --kv-cache f32; done
done
python3 - "$OUT/ab.jsonl" <<'PY' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
by = {}
for r in rows: by.setdefault(r["variant"], {})[r["rep"]] = r
def ratio(a, b):
    if a not in by or b not in by: return ""
    v = [by[a][k]["prefill_tok_s"] / by[b][k]["prefill_tok_s"] for k in by[a] if k in by[b]]
    return "%.2fx" % statistics.median(v) if v else ""
print("| variant | prefill GEMM | prefill tok/s (median) | vs bf16 | vs fp32 | vs its --quant-act f32 | vs base |")
print("|---|---|---|---|---|---|---|")
for name in by:
    pf = {r.get("quant_prefill", "?") for r in by[name].values()}
    kv = {r.get("kv_cache", "f32") for r in by[name].values()}
    kind = ("fp32" if name == "f32" else "bf16 weights" if name == "bf16" else "/".join(sorted(pf))) + ", KV " + "/".join(sorted(kv))
    fmt = name.split("-")[0]
    print("| %s | %s | %.1f | %s | %s | %s | %s |" % (name, kind, statistics.median(r["prefill_tok_s"] for r in by[name].values()),
          ratio(name, "bf16"), ratio(name, "f32"), ratio(name, fmt + "-f32") if name in ("q8", "q4", "nf4", fmt + "-kvf32") else "",
          ratio(name, fmt + "-base") if name in ("q8", "q4", "nf4") else ""))
PY
