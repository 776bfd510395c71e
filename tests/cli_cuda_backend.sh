#!/usr/bin/env bash
# gpt2c train --backend cuda, end to end.  Without CUDA in the build, or
# without a device, it must fail with one line and no crash (checked here on
# every machine).  With a device it trains 8 steps on cuda and on cpu from the
# same seed: the losses must agree closely and the checkpoints must load.
set -u
G=$1
. "$(dirname "$0")/lib/cli.sh"

for i in $(seq 1 600); do
  echo "the quick brown fox number $i jumps over the lazy dog, and the dog sleeps."
done >"$W/text.txt"
BUILD=$($G --version)
if [[ $BUILD == *+jansson* && $BUILD == *+utf8proc* ]]; then
  $G bpe-train --in "$W/text.txt" --vocab-size 300 --out "$W/vocab" >/dev/null 2>&1 || { echo "bpe-train failed"; exit 1; }
  $G tokenize --vocab "$W/vocab" --in "$W/text.txt" --out "$W/shards" --name t --val-tokens 1024 >/dev/null 2>&1 || { echo "tokenize failed"; exit 1; }
  VOCAB="$W/vocab"
else # no tokenizer in this build: shards of pseudo-random ids < 300, written here (llm.c format)
  mkdir -p "$W/shards"
  token_shard "$W/shards/t_val_000000.bin" 1024 300 37 7 11
  token_shard "$W/shards/t_train_000000.bin" 4096 300 37 7 22
  VOCAB=300
fi
COMMON=(--model gpt2 --layers 2 --heads 2 --embd 64 --ctx 64 --vocab "$VOCAB" --data "$W/shards/t_train_*.bin"
        --batch 4 --seq 48 --lr 1e-3 --seed 7 --steps 8)
SAVE=(--save "$W/cuda.safetensors")
[[ $BUILD == *+jansson* ]] || SAVE=() # checkpoints are safetensors, which need jansson

$G train "${COMMON[@]}" --backend cuda --log "$W/cuda.jsonl" "${SAVE[@]}" >/dev/null 2>"$W/err"
rc=$?
if [ $rc -ne 0 ]; then
  if [ $rc -ge 128 ]; then fail "crashed (exit $rc)"; cat "$W/err"; exit 1; fi
  [ "$(wc -l <"$W/err")" -eq 1 ] && pass "one line: $(cat "$W/err")" || { fail "expected one line on stderr"; cat "$W/err"; }
  if grep -q "no CUDA device available (cudaGetDeviceCount: \|built without CUDA" "$W/err"; then
    pass "no device / no CUDA: refused cleanly"
    [ $fails -eq 0 ] && exit 77 || exit 1 # the GPU half did not run: skipped
  fi
  fail "cuda train failed on a machine with a device"; cat "$W/err"; exit 1
fi
pass "train 8 steps on cuda"
$G train "${COMMON[@]}" --backend cpu --log "$W/cpu.jsonl" >/dev/null 2>&1 || fail "train on cpu"
# per-step losses: cuda vs cpu within 1e-3 relative (fp32 everywhere; AdamW sign flips of ~0 grads drift a little)
paste <(grep -o '"loss":[0-9.eE+-]*' "$W/cuda.jsonl" | cut -d: -f2) <(grep -o '"loss":[0-9.eE+-]*' "$W/cpu.jsonl" | cut -d: -f2) |
  awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-3 * $2) { bad++; print "step " NR-1 ": cuda " $1 " cpu " $2 } ; n++ }
       END { exit (bad > 0 || n != 8) }' && pass "losses match cpu" || fail "losses differ from cpu"
if [ ${#SAVE[@]} -eq 0 ]; then
  echo "built without jansson: no checkpoint to eval"
else
  $G eval --model "$W/cuda.safetensors" --data "$W/shards/t_val_*.bin" --batch 2 --seq 48 --backend cuda >/dev/null 2>&1 &&
    pass "eval of the cuda checkpoint on cuda" || fail "eval on cuda"
fi
[ $fails -eq 0 ] && exit 0 || exit 1
