#!/usr/bin/env bash
# The main job: build, tokenize a corpus, train a small GPT-2 for a few
# hundred steps with a live progress line, report validation loss and
# perplexity, and generate a sample.  Works offline: see scripts/find-data.sh
# for where the corpus and vocabulary come from.
set -euo pipefail
cd "$(dirname "$0")/.."
GPT2C_WITH_CHROMIUM=0 bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
G=./build/gpt2c
OUT=${GPT2C_DEMO_OUT:-out/demo}
STEPS=${GPT2C_DEMO_STEPS:-300}
mkdir -p "$OUT"

eval "$(bash scripts/find-data.sh)"   # sets VOCAB_DIR, TEXT, SOURCE
echo "== data: $SOURCE"
echo "   vocabulary: $VOCAB_DIR"
echo "   corpus: $TEXT"


echo "== tokenize"
rm -rf "$OUT/shards"
# shellcheck disable=SC2086
$G tokenize --vocab "$VOCAB_DIR" --in $TEXT --out "$OUT/shards" --name demo

echo "== train ($STEPS steps)"
$G train --model gpt2 --layers 4 --heads 4 --embd 128 --ctx 128 --vocab "$VOCAB_DIR" \
  --data "$OUT/shards/demo_train_*.bin" --val-data "$OUT/shards/demo_val_*.bin" \
  --batch 8 --seq 64 --steps "$STEPS" --lr 2e-3 --schedule cosine --warmup 20 --min-lr-frac 0.1 \
  --eval-every 50 --eval-batches 8 --save "$OUT/model.safetensors" --log "$OUT/train.jsonl"

echo "== evaluate"
$G eval --model "$OUT/model.safetensors" --data "$OUT/shards/demo_val_*.bin" --batch 8 --seq 64

echo "== generate"
$G generate --model "$OUT/model.safetensors" --vocab "$VOCAB_DIR" --prompt "${GPT2C_DEMO_PROMPT:-The }" \
  --max-tokens 80 --temperature 0.8 --top-k 40 --seed 1
echo
echo "== done: checkpoint $OUT/model.safetensors, log $OUT/train.jsonl"
