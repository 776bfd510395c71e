#!/usr/bin/env bash
# Quantized inference figures of BENCHMARKS.md ("Quantized weights"), in one
# sitting: GPT-2 124M with random weights as fp32 / bf16 (where `--precision
# bf16` exists) / q8 / q4 / nf4: file size, resident weight memory, prefill
# tok/s (P=512), decode tok/s (batch 1 and 8) and decode as a share of its
# memory-bandwidth bound (and q4 with an fp32 KV cache beside its default bf16 one); then perplexity on tinyshakespeare's validation
# split of a checkpoint trained here (CKPT, tokenized with TOK), per format.
# Prints a markdown table at the end (summary.md).
# Usage: bench/quant.sh [BUILD_DIR] [OUT] [CKPT] [TOK]
#   CKPT: an fp32 checkpoint trained on tinyshakespeare (optional; BENCHMARKS.md says how)
#   TOK:  the tokenizer dir CKPT was trained with (default: the GPT-2 one)
#   REPS: repeats of the interleaved speed runs (default 5); P / TOKENS: prompt and decode lengths (512 / 32)
set -eu
BUILD="${1:-build}"
OUT="${2:-out/bench_quant}"
CKPT="${3:-}"
DATA="${GPT2C_DATA:-../shared/data}"
TOK="${4:-$DATA/gpt2-tokenizer}"
G="$BUILD/gpt2c"
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/commands.txt"; }
{ uname -a; lscpu | grep -E "Vendor ID|CPU family|Model:|Model name|Flags" | cut -c1-200; nproc; uptime; } > "$OUT/machine.txt"

log "$G bench peak --remeasure"
"$G" bench peak --remeasure > "$OUT/peak.txt" 2>&1

# the files: fp32 (every tensor kept: written by the same writer), q8, q4, nf4
log "$G quantize --model gpt2 --format FMT --out $OUT/gpt2_FMT.safetensors"
if [ ! -f "$OUT/gpt2_f32.safetensors" ]; then
  "$G" quantize --model gpt2 --format q8 --keep wte,c_attn,c_proj,c_fc --out "$OUT/gpt2_kept.safetensors" > "$OUT/quantize.txt"
  "$G" convert "$OUT/gpt2_kept.safetensors" "$OUT/gpt2_f32.safetensors" > /dev/null && rm -f "$OUT/gpt2_kept.safetensors"
fi
for f in q8 q4 nf4; do
  [ -f "$OUT/gpt2_$f.safetensors" ] || "$G" quantize --model gpt2 --format $f --out "$OUT/gpt2_$f.safetensors" >> "$OUT/quantize.txt"
done
ls -l "$OUT"/gpt2_*.safetensors > "$OUT/sizes.txt"

# bf16: the fp32 file run with --precision bf16, where that option exists
# q4-kvf32: q4 with the fp32 KV cache (quantized models default to a bf16 one), to show what the cache's bytes cost
FMTS="f32 q8 q4 nf4"
if "$G" bench generate --help 2>&1 | grep -q -- "--precision"; then FMTS="f32 bf16 q8 q4 nf4"; fi
if "$G" bench generate --help 2>&1 | grep -q -- "--kv-cache"; then FMTS="$FMTS q4-kvf32"; fi
args_of() {
  case $1 in
    bf16) echo "--model $OUT/gpt2_f32.safetensors --precision bf16" ;;
    q4-kvf32) echo "--model $OUT/gpt2_q4.safetensors --kv-cache f32" ;;
    *) echo "--model $OUT/gpt2_$1.safetensors" ;;
  esac
}

# speed: each format in its own process (resident memory is per process), one timed run per process,
# the formats interleaved and repeated REPS times so that a busy moment of a shared machine hits them
# alike; the summary quotes medians and the ratios to fp32 within each repeat
rm -f "$OUT"/generate_*.jsonl
for rep in $(seq "${REPS:-5}"); do
  for b in 1 8; do
    for f in $FMTS; do
      log "$G bench generate $(args_of $f) --prompt-len "${P:-512}" --tokens "${TOKENS:-32}" --batch $b --runs 1 --json"
      "$G" bench generate $(args_of $f) --prompt-len "${P:-512}" --tokens "${TOKENS:-32}" --batch $b --runs 1 --json \
        | sed "s/^{/{\"rep\":$rep,\"fmt\":\"$f\",/" >> "$OUT/generate_$f.jsonl"
    done
  done
done

# quality: perplexity of the validation split per format (loss of the dequantized weights)
rm -f "$OUT/eval.txt"
if [ -n "$CKPT" ] && [ -f "$DATA/tinyshakespeare/input.txt" ]; then
  [ -f "$OUT/ts/ts_val_000000.bin" ] || "$G" tokenize --vocab "$TOK" --in "$DATA/tinyshakespeare/input.txt" --out "$OUT/ts" --name ts > /dev/null
  for f in $FMTS; do
    case $f in f32) Q=() ;; bf16) Q=(--precision bf16) ;; q4-kvf32) continue ;; *) Q=(--quant $f) ;; esac
    log "$G eval --model $CKPT ${Q[*]} --data $OUT/ts/ts_val_000000.bin --batch 4 --seq 256"
    echo "$f $("$G" eval --model "$CKPT" ${Q[@]+"${Q[@]}"} --data "$OUT/ts/ts_val_000000.bin" --batch 4 --seq 256 2>&1 | tail -1)" >> "$OUT/eval.txt"
  done
  "$G" quantize --model "$CKPT" --format nf4 --no-double-quant --out "$OUT/ckpt_nf4_nodq.safetensors" > /dev/null
  echo "nf4-no-dq $("$G" eval --model "$OUT/ckpt_nf4_nodq.safetensors" --data "$OUT/ts/ts_val_000000.bin" --batch 4 --seq 256 | tail -1)" >> "$OUT/eval.txt"
fi
python3 "$(dirname "$0")/quant_summary.py" "$OUT" | tee "$OUT/summary.md"
echo "results in $OUT"
