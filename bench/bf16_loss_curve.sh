#!/usr/bin/env bash
# bf16 vs fp32 training on tinyshakespeare, 200 steps each (issue 12): the
# two loss curves, a table and an SVG plot.
# Usage: bench/bf16_loss_curve.sh [path/to/gpt2c] [outdir]   (default build/gpt2c, bench/out/bf16_loss)
# A 1024-id BPE tokenizer is trained on the text (gpt2c bpe-train) so the
# model stays small: 3 layers, 4 heads, 128 channels, context 64 (0.8M
# parameters), B=8 T=64, AdamW lr 1e-3 with 20 warm-up steps then cosine to
# 10%, the same seed and batches for both; validation loss every 50 steps.
# Two runs of 200 steps take a few minutes on a loaded 2-core machine.
set -euo pipefail
G=$(realpath "${1:-build/gpt2c}")
OUT=${2:-bench/out/bf16_loss}
TEXT=${TEXT:-$(dirname "$0")/../../shared/data/tinyshakespeare/input.txt}
STEPS=${STEPS:-200}
[ -f "$TEXT" ] || { echo "no tinyshakespeare at $TEXT (set TEXT=)"; exit 1; }
mkdir -p "$OUT"
lscpu | grep -E "Model name|CPU family|^Model:" || true
uptime
"$G" bpe-train --in "$TEXT" --vocab-size 1024 --out "$OUT/tok" >/dev/null
"$G" tokenize --vocab "$OUT/tok" --in "$TEXT" --out "$OUT/shards" --name ts >/dev/null
for p in fp32 bf16; do
  /usr/bin/time -f "$p: %e s wall, %U s user" "$G" train --model gpt2 --layers 3 --heads 4 --embd 128 --ctx 64 --vocab "$OUT/tok" \
    --data "$OUT/shards/ts_train_*.bin" --val-data "$OUT/shards/ts_val_*.bin" --batch 8 --seq 64 --steps "$STEPS" \
    --lr 1e-3 --warmup 20 --schedule cosine --min-lr-frac 0.1 --eval-every 50 --eval-batches 16 --seed 1337 \
    --precision $p --log "$OUT/$p.jsonl" 2>&1 | grep -v "^step" | tail -2
done
python3 "$(dirname "$0")/bf16_loss_plot.py" "$OUT/fp32.jsonl" "$OUT/bf16.jsonl" "$OUT/bf16_loss.svg" | tee "$OUT/table.md"
