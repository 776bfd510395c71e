#!/usr/bin/env bash
# Every number in BENCHMARKS.md, in one sitting on one machine: run it on an
# otherwise idle host.  Raw outputs go to OUT (default out/bench); the tables
# in BENCHMARKS.md are copied from them.
# Usage: bench/run_all.sh [BUILD_DIR] [OUT]
set -eu
BUILD="${1:-build}"
OUT="${2:-out/bench}"
G="$BUILD/gpt2c"
DATA="${GPT2C_DATA:-../shared/data}"
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/commands.txt"; }

{ uname -a; grep -m1 "model name" /proc/cpuinfo; nproc; uptime; } > "$OUT/machine.txt"

log "$G bench peak --remeasure"
"$G" bench peak --remeasure > "$OUT/peak.txt" 2>&1

log "$G bench train --model gpt2 --batch 4 --seq 64 --steps 10 --threads 1,2 --backend cpu,blas"
"$G" bench train --model gpt2 --batch 4 --seq 64 --steps 10 --threads 1,2 --backend cpu,blas > "$OUT/train_t64.txt" 2>&1

log "$G bench train --model gpt2 --batch 4 --seq 256 --steps 4 --threads 1,2 --backend cpu"
"$G" bench train --model gpt2 --batch 4 --seq 256 --steps 4 --threads 1,2 --backend cpu > "$OUT/train_t256.txt" 2>&1

log "$G bench gemm --threads 2"
"$G" bench gemm --threads 2 > "$OUT/gemm.txt" 2>&1

# peak RSS of a real training run (124M, B=4, T=64), as llm.c's figure was taken
if [ -f "$DATA/tinyshakespeare/input.txt" ]; then
  "$G" tokenize --vocab "$DATA/gpt2-tokenizer" --in "$DATA/tinyshakespeare/input.txt" --out "$OUT/ts" --name ts > /dev/null 2>&1
  log "/usr/bin/time -v $G train --model gpt2 --data '$OUT/ts/ts_train_*.bin' --batch 4 --seq 64 --steps 10 --eval-every 0 --threads N"
  for t in 1 2; do
    /usr/bin/time -v "$G" train --model gpt2 --data "$OUT/ts/ts_train_*.bin" --batch 4 --seq 64 --steps 10 \
      --eval-every 0 --threads $t --log "$OUT/train_rss_t$t.jsonl" > "$OUT/train_rss_t$t.txt" 2>&1
  done
fi

log "bench/bench_generate.sh $BUILD 2"
bash bench/bench_generate.sh "$BUILD" 2 > "$OUT/generate.jsonl" 2>&1
log "$G bench generate --model gpt2 --prompt-len 512 --tokens 64 --runs 5 --threads 1 --hugepages --json"
"$G" bench generate --model gpt2 --prompt-len 512 --tokens 64 --runs 5 --threads 1 --hugepages --json > "$OUT/generate_t1.json" 2>&1

log "$G profile --model gpt2 --batch 4 --seq 64 --steps 1 --trials 10 --threads 2 --overhead --out $OUT/prof_t64"
"$G" profile --model gpt2 --batch 4 --seq 64 --steps 1 --trials 10 --threads 2 --overhead --out "$OUT/prof_t64" > "$OUT/prof_t64.txt" 2>&1
log "$G profile --model gpt2 --batch 1 --seq 1024 --steps 1 --trials 5 --threads 2 --out $OUT/prof_t1024"
"$G" profile --model gpt2 --batch 1 --seq 1024 --steps 1 --trials 5 --threads 2 --out "$OUT/prof_t1024" > "$OUT/prof_t1024.txt" 2>&1

if [ -f "$DATA/gpt2-tokenizer/encoder.json" ]; then
  log "bench/bench_tokenizer.sh $BUILD"
  bash bench/bench_tokenizer.sh "$BUILD" > "$OUT/tokenizer.txt" 2>&1 || echo "tokenizer bench failed (tiktoken installed?)" >> "$OUT/tokenizer.txt"
fi
uptime >> "$OUT/machine.txt"
echo "done: $OUT"
