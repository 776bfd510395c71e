#!/usr/bin/env bash
# BENCHMARKS.md, "Compression pipeline": (1) the cost of distillation per step against training the same
# student alone (interleaved runs, medians of the logged step times); (2) `gpt2c pipeline`'s table.
# usage: bench/pipeline.sh [GPT2C_BINARY] [WORKDIR] [quick|full]   (env THREADS, default 1: on a shared,
# loaded machine 2 OpenMP threads were many times slower; on a quiet one use THREADS=2)
set -eu
G="${1:-build/gpt2c}"
W="${2:-$(mktemp -d)}"
SIZE="${3:-quick}"
D="${GPT2C_DATA:-$(cd "$(dirname "$0")/.." && pwd)/../shared/data}"
TH="${THREADS:-1}"
mkdir -p "$W"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) (family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg); threads $TH"
# a 2048-id BPE learnt on the corpus: the transformer, not the LM head, carries the compute
[ -f "$W/v2k/merges.txt" ] || "$G" bpe-train --in "$D/tinyshakespeare/input.txt" --vocab-size 2048 --out "$W/v2k" >/dev/null
[ -f "$W/ts/ts_val_000000.bin" ] ||
    "$G" tokenize --vocab "$W/v2k" --in "$D/tinyshakespeare/input.txt" --out "$W/ts" --name ts >/dev/null
TRAIN="$W/ts/ts_train_*.bin" VAL="$W/ts/ts_val_*.bin"

# (1) distill vs train, same student (2 x 64), teacher 4 x 128, B=8 T=64, 12 steps each, 3 interleaved rounds
[ -f "$W/teacher.safetensors" ] ||
    "$G" train --model gpt2 --layers 4 --heads 4 --embd 128 --ctx 64 --vocab 2048 --data "$TRAIN" --steps 30 \
        --batch 8 --seq 64 --eval-every 0 --lr 3e-3 --threads "$TH" --save "$W/teacher.safetensors" >/dev/null 2>&1
S=(--student gpt2 --layers 2 --heads 2 --embd 64 --ctx 64 --vocab 2048)
C=(--data "$TRAIN" --steps 12 --batch 8 --seq 64 --eval-every 0 --threads "$TH")
med() { sed -n 's/.*"ms":\([0-9.]*\).*/\1/p' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
rm -f "$W"/ab_*.jsonl
for r in 1 2 3; do
    "$G" train --model gpt2 --layers 2 --heads 2 --embd 64 --ctx 64 --vocab 2048 "${C[@]}" --log "$W/ab_train_$r.jsonl" 2>/dev/null
    "$G" distill --teacher "$W/teacher.safetensors" "${S[@]}" "${C[@]}" --log "$W/ab_distill_$r.jsonl" 2>/dev/null
done
tr=$(med "$W"/ab_train_*.jsonl) ds=$(med "$W"/ab_distill_*.jsonl)
echo "step time, student 2 x 64 (vocab 2048), B=8 T=64: train $tr ms, distill from 4 x 128 $ds ms (median of 36 steps each; x$(awk -v a="$ds" -v b="$tr" 'BEGIN { printf "%.2f", a / b }'))"

# (2) the pipeline table
Q=(); [ "$SIZE" = quick ] && Q=(--quick)
"$G" pipeline "${Q[@]}" --vocab 2048 --threads "$TH" --data "$TRAIN" --val-data "$VAL" --out "$W/pipeline_$SIZE" 2>"$W/pipeline_$SIZE.log"
