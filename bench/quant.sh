#!/usr/bin/env bash
# Quantized inference figures of BENCHMARKS.md ("Quantized weights"), in one
# sitting: GPT-2 124M with random weights as fp32 / q8 / q4 / nf4 files: file
# size, resident weight memory, prefill tok/s (P=512), decode tok/s (batch 1
# and 8); then perplexity on tinyshakespeare's validation split of a checkpoint
# trained here (CKPT), per format.
# Usage: bench/quant.sh [BUILD_DIR] [OUT] [CKPT]
#   CKPT: an fp32 checkpoint trained on tinyshakespeare (optional; see BENCHMARKS.md for how)
set -eu
BUILD="${1:-build}"
OUT="${2:-out/bench_quant}"
CKPT="${3:-}"
G="$BUILD/gpt2c"
DATA="${GPT2C_DATA:-../shared/data}"
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/commands.txt"; }
{ uname -a; lscpu | grep -E "Vendor ID|CPU family|Model:|Model name|Flags" | cut -c1-200; nproc; uptime; } > "$OUT/machine.txt"

log "$G bench peak --remeasure"
"$G" bench peak --remeasure > "$OUT/peak.txt" 2>&1

# the files: fp32 (every tensor kept: written by the same writer), q8, q4, nf4
log "$G quantize --model gpt2 --format FMT --out $OUT/gpt2_FMT.safetensors"
# (fp32: every weight kept by quantize, then convert writes a plain fp32 checkpoint of the same random model)
if [ ! -f "$OUT/gpt2_f32.safetensors" ]; then
  "$G" quantize --model gpt2 --format q8 --keep wte,c_attn,c_proj,c_fc --out "$OUT/gpt2_kept.safetensors" > "$OUT/quantize.txt"
  "$G" convert "$OUT/gpt2_kept.safetensors" "$OUT/gpt2_f32.safetensors" > /dev/null && rm -f "$OUT/gpt2_kept.safetensors"
fi
for f in q8 q4 nf4; do
  [ -f "$OUT/gpt2_$f.safetensors" ] || "$G" quantize --model gpt2 --format $f --out "$OUT/gpt2_$f.safetensors" >> "$OUT/quantize.txt"
done
ls -l "$OUT"/gpt2_*.safetensors > "$OUT/sizes.txt"

# speed: each format in its own process (resident memory is per process), one timed run per process,
# the formats interleaved and repeated REPS times so that a busy moment of a shared machine hits them
# alike; BENCHMARKS.md quotes the medians and the best of the repeats, and the ratios within each repeat
for rep in $(seq "${REPS:-5}"); do
  for b in 1 8; do
    for f in f32 q8 q4 nf4; do
      log "$G bench generate --model $OUT/gpt2_$f.safetensors --prompt-len 512 --tokens 32 --batch $b --runs 1 --json"
      "$G" bench generate --model "$OUT/gpt2_$f.safetensors" --prompt-len 512 --tokens 32 --batch $b --runs 1 --json \
        >> "$OUT/generate_$f.jsonl"
    done
  done
done

# quality: perplexity of the validation split per format (loss of the dequantized weights)
if [ -n "$CKPT" ] && [ -f "$DATA/tinyshakespeare/input.txt" ]; then
  [ -f "$OUT/ts/ts_val_000000.bin" ] || "$G" tokenize --vocab "$DATA/gpt2-tokenizer" --in "$DATA/tinyshakespeare/input.txt" --out "$OUT/ts" --name ts > /dev/null
  for f in f32 q8 q4 nf4; do
    if [ $f = f32 ]; then Q=(); else Q=(--quant $f); fi
    log "$G eval --model $CKPT ${Q[*]} --data $OUT/ts/ts_val_000000.bin --batch 4 --seq 256"
    echo "$f $("$G" eval --model "$CKPT" ${Q[@]+"${Q[@]}"} --data "$OUT/ts/ts_val_000000.bin" --batch 4 --seq 256)" >> "$OUT/eval.txt"
  done
  "$G" quantize --model "$CKPT" --format nf4 --no-double-quant --out "$OUT/ckpt_nf4_nodq.safetensors" > /dev/null
  echo "nf4-no-dq $("$G" eval --model "$OUT/ckpt_nf4_nodq.safetensors" --data "$OUT/ts/ts_val_000000.bin" --batch 4 --seq 256)" >> "$OUT/eval.txt"
fi
echo "results in $OUT"
