#!/usr/bin/env bash
# Decode before / after (issue 13, third session): two builds of gpt2c (BASE, NEW) run `bench generate` on
# GPT-2 124M with random weights quantized on load, interleaved (base, new, base, new, ...) so that a busy
# moment of a shared machine hits both alike; medians over REPS and the new/base ratio within each repeat.
# MODE=cpu (default): 1 thread (THREADS=N: N), process CPU time (--cpu-time: at 1 thread immune to preemption,
# not to a neighbour's memory traffic; at 2 it counts the threads' waits at the stage barriers too); MODE=wall: THREADS threads (default 2), wall clock.  NEW's default KV cache is bf16 for
# quantized weights; KV=f32 runs NEW with --kv-cache f32 (the kernels alone).
# BASE_ENV / NEW_ENV: environment settings for each side (e.g. BASE_ENV=GPT2C_INFER_SPLIT=0 with one build as
# both BASE and NEW: an A/B of a runtime switch).
# Usage: bench/quant_ab.sh BASE_BUILD NEW_BUILD [OUT]   (REPS=3 P=512 TOKENS=32 BATCHES="1 8" FMTS="f32 q8 q4 nf4")
set -eu
BASE="$1/gpt2c"; NEW="$2/gpt2c"; OUT="${3:-out/bench_quant_ab}"
mkdir -p "$OUT"; rm -f "$OUT"/ab.jsonl
{ lscpu | grep -E "Vendor ID|CPU family|Model:|Model name" | tr -s ' '; uptime; } | tee "$OUT/machine.txt"
if [ "${MODE:-cpu}" = cpu ]; then T=(--threads "${THREADS:-1}" --cpu-time); else T=(--threads "${THREADS:-2}"); fi
for rep in $(seq "${REPS:-3}"); do
  for b in ${BATCHES:-1 8}; do
    for f in ${FMTS:-f32 q8 q4 nf4}; do
      Q=(); [ "$f" = f32 ] || Q=(--quant "$f")
      for side in base new; do
        G=$BASE; E=${BASE_ENV:-}; K=(); [ $side = new ] && G=$NEW && E=${NEW_ENV:-} && [ -n "${KV:-}" ] && K=(--kv-cache "$KV")
        env $E "$G" bench generate --model gpt2 "${Q[@]+"${Q[@]}"}" "${K[@]+"${K[@]}"}" "${T[@]}" --prompt-len "${P:-512}" \
          --tokens "${TOKENS:-32}" --batch "$b" --runs 1 --no-peak --json \
          | sed "s/^{/{\"rep\":$rep,\"side\":\"$side\",\"fmt\":\"$f\",/" >> "$OUT/ab.jsonl"
      done
    done
  done
done
python3 - "$OUT/ab.jsonl" <<'EOF' | tee "$OUT/summary.md"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
key = lambda r: (r["fmt"], r["batch"])
print("| format | batch | KV (new) | base tok/s | new tok/s | new / base | new vs fp32 (new) |")
print("|---|---|---|---|---|---|---|")
for fmt, b in sorted({key(r) for r in rows}, key=lambda k: (k[1], ["f32", "q8", "q4", "nf4"].index(k[0]))):
    get = lambda side, f=fmt: {r["rep"]: r["decode_tok_s"] for r in rows if (r["fmt"], r["batch"], r["side"]) == (f, b, side)}
    base, new, f32 = get("base"), get("new"), get("new", "f32")
    ratio = statistics.median([new[k] / base[k] for k in new if k in base])
    vs = statistics.median([new[k] / f32[k] for k in new if k in f32]) if f32 else float("nan")
    kv = {r.get("kv_cache", "f32") for r in rows if (r["fmt"], r["batch"], r["side"]) == (fmt, b, "new")}
    print("| %s | %d | %s | %.1f | %.1f | %.2fx | %.2fx |" % (fmt, b, "/".join(sorted(kv)), statistics.median(base.values()),
                                                          statistics.median(new.values()), ratio, vs))
EOF
