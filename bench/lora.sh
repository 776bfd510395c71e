#!/usr/bin/env bash
# LoRA / QLoRA training memory and step time vs full fine-tuning, GPT-2 124M (BENCHMARKS.md, "LoRA and QLoRA").
# Each configuration runs in its own process (peak RSS is per process), interleaved over ROUNDS rounds:
#   full  : every parameter trains (gradients + AdamW moments for all 124M)
#   lora  : rank 8 on c_attn (alpha 16), the base frozen
#   qlora : the same over an nf4 base (quantized on load; the peak RSS includes the fp32 weights loaded first)
# Reports the medians over rounds of: step median_ms, cpu_ms per step (process CPU time: less sensitive to other
# jobs), peak RSS, and the slab bytes gpt2c holds; ratios vs full.
# usage: bench/lora.sh [GPT2C_BINARY]   (env ROUNDS=3 STEPS=4 WARMUP=1 B=4 T=128 THREADS=all cores)
set -eu
G="${1:-build/gpt2c}"
ROUNDS="${ROUNDS:-3}" STEPS="${STEPS:-4}" WARMUP="${WARMUP:-1}" B="${B:-4}" T="${T:-128}"
TH=(); [ -n "${THREADS:-}" ] && TH=(--threads "$THREADS")
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "gpt2c bench train --model gpt2 --batch $B --seq $T --steps $STEPS --warmup $WARMUP ${TH[*]:-}; $ROUNDS interleaved rounds"
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
declare -A ARGS=([full]="" [lora]="--lora-rank 8 --lora-alpha 16" [qlora]="--lora-rank 8 --lora-alpha 16 --quant nf4")
for r in $(seq 1 "$ROUNDS"); do
    for c in full lora qlora; do
        # shellcheck disable=SC2086
        "$G" bench train --model gpt2 --batch "$B" --seq "$T" --steps "$STEPS" --warmup "$WARMUP" "${TH[@]}" \
            ${ARGS[$c]} --json > "$W/$c.$r.json"
    done
done
python3 - "$W" "$ROUNDS" <<'PY'
import json, statistics, sys
w, rounds = sys.argv[1], int(sys.argv[2])
MiB = 1048576
res = {}
for c in ("full", "lora", "qlora"):
    runs = [json.load(open(f"{w}/{c}.{r}.json")) for r in range(1, rounds + 1)]
    med = lambda f: statistics.median(f(x) for x in runs)
    b = runs[0]["bytes"]
    res[c] = dict(ms=med(lambda x: x["results"][0]["median_ms"]), cpu=med(lambda x: x["results"][0]["cpu_ms_per_step"]),
                  fwd=med(lambda x: x["results"][0]["forward_ms"]), bwd=med(lambda x: x["results"][0]["backward_ms"]),
                  upd=med(lambda x: x["results"][0]["update_ms"]), rss=med(lambda x: x["peak_rss_bytes"]) / MiB,
                  slabs=(b["params"] + b["quantized"] + b["grads"] + b["moments"] + b["acts"] + b["acts_backward"]
                         + b["lora_params"] + b["lora_state"] + b["lora_acts"]) / MiB, b=b)
f = res["full"]
print("| run | step ms | cpu ms/step | fwd / bwd / update ms | peak RSS MiB | slabs MiB | params | quantized | grads | moments | acts (+bwd) | LoRA (+state, acts) |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for c, x in res.items():
    b = x["b"]
    print(f"| {c} | {x['ms']:.0f} ({x['ms']/f['ms']:.2f}x) | {x['cpu']:.0f} ({x['cpu']/f['cpu']:.2f}x) | "
          f"{x['fwd']:.0f} / {x['bwd']:.0f} / {x['upd']:.1f} | {x['rss']:.0f} ({x['rss']/f['rss']:.0%}) | "
          f"{x['slabs']:.0f} ({x['slabs']/f['slabs']:.0%}) | {b['params']/MiB:.0f} | {b['quantized']/MiB:.0f} | "
          f"{b['grads']/MiB:.0f} | {b['moments']/MiB:.0f} | {b['acts']/MiB:.0f} (+{b['acts_backward']/MiB:.0f}) | "
          f"{b['lora_params']/MiB:.2f} (+{b['lora_state']/MiB:.2f}, {b['lora_acts']/MiB:.1f}) |")
PY
