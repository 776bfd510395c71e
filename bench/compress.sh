#!/usr/bin/env bash
# Pruning's quality cost on a tiny GPT-2 trained here on tinyshakespeare (BENCHMARKS.md, "Pruning"):
# validation loss / perplexity of the dense model, pruned (global L1) at 50/80/90% and 2:4, and after a short
# fine-tune with --keep-sparsity.  Pruned models run the same dense GEMMs (no sparse kernel), so their speed is
# the dense model's; nothing here is timed.
# usage: bench/compress.sh [GPT2C_BINARY] [WORKDIR]   (env STEPS, FT_STEPS to change the training lengths)
set -eu
G="${1:-build/gpt2c}"
W="${2:-$(mktemp -d)}"
D="$(cd "$(dirname "$0")/.." && pwd)/../shared/data"
STEPS="${STEPS:-400}"
FT_STEPS="${FT_STEPS:-100}"
mkdir -p "$W"
TH=(--threads "${THREADS:-1}") # one thread: on a shared, loaded machine 2 OpenMP threads were ~10x slower
# a 512-id byte-level BPE learnt on the corpus keeps the model small (the 50257-id GPT-2 vocabulary would dominate)
[ -f "$W/tok/merges.txt" ] || "$G" bpe-train --in "$D/tinyshakespeare/input.txt" --vocab-size 512 --out "$W/tok" >/dev/null
[ -f "$W/ts/ts_val_000000.bin" ] ||
    "$G" tokenize --vocab "$W/tok" --in "$D/tinyshakespeare/input.txt" --out "$W/ts" --name ts >/dev/null
TRAIN="$W/ts/ts_train_*.bin" VAL="$W/ts/ts_val_000000.bin"
[ -f "$W/dense.safetensors" ] ||
    "$G" train --model gpt2 --layers 4 --heads 4 --embd 128 --ctx 64 --vocab 512 --data "$TRAIN" --steps "$STEPS" \
        --batch 8 --seq 64 --eval-every 0 --lr 1e-3 --schedule cosine --warmup 20 "${TH[@]}" \
        --save "$W/dense.safetensors" >/dev/null 2>&1
ev() { "$G" eval --model "$1" --data "$VAL" --batch 8 --seq 64 "${TH[@]}"; }
echo "model: 4 layers, 4 heads, 128 channels, ctx 64, 512-id BPE; $STEPS steps B=8 T=64 lr 1e-3 cosine on tinyshakespeare"
echo "dense:            $(ev "$W/dense.safetensors")"
for s in 0.5 0.8 0.9; do
    "$G" prune --model "$W/dense.safetensors" --sparsity $s --scope global --out "$W/g$s.safetensors" >/dev/null
    echo "global l1 $s:    $(ev "$W/g$s.safetensors")"
    "$G" prune --model "$W/dense.safetensors" --sparsity $s --scope layer --out "$W/l$s.safetensors" >/dev/null
    echo "layer  l1 $s:    $(ev "$W/l$s.safetensors")"
done
"$G" prune --model "$W/dense.safetensors" --pattern 2:4 --out "$W/s24.safetensors" >/dev/null
echo "2:4:              $(ev "$W/s24.safetensors")"
for s in 0.8 0.9; do
    "$G" train --model "$W/g$s.safetensors" --keep-sparsity --data "$TRAIN" --steps "$FT_STEPS" --batch 8 --seq 64 \
        --eval-every 0 "${TH[@]}" --lr 3e-4 --save "$W/g${s}ft.safetensors" >/dev/null 2>&1
    echo "global $s + $FT_STEPS steps --keep-sparsity: $(ev "$W/g${s}ft.safetensors")"
done
"$G" train --model "$W/dense.safetensors" --data "$TRAIN" --steps "$FT_STEPS" --batch 8 --seq 64 --eval-every 0 \
    --lr 3e-4 "${TH[@]}" --save "$W/denseft.safetensors" >/dev/null 2>&1
echo "dense + $FT_STEPS steps (same fine-tune, control): $(ev "$W/denseft.safetensors")"
"$G" info "$W/g0.9ft.safetensors" | grep -E "h\.0\.(attn|mlp)\..*weight"
