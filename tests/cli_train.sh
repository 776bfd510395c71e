#!/usr/bin/env bash
# gpt2c train / eval end to end on a corpus made here (no shared data needed):
# progress and JSONL log, exact resume, eval, and the bad-input cases of the
# core issue, each a one-line error with a non-zero exit and no crash.
set -u
G=$1
# the corpus goes through bpe-train/tokenize (jansson + utf8proc); checkpoints are safetensors (jansson)
case "$("$G" --version)" in
  *-jansson*) echo "SKIP: built without jansson"; exit 77 ;;
  *-utf8proc*) echo "SKIP: built without utf8proc"; exit 77 ;;
esac
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fails=0
pass() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

# expect_error NAME PATTERN CMD... : non-zero exit (not a signal), one stderr line matching PATTERN
# (expect_late_error: the error is the LAST line, after progress output)
expect_error() { LATE=0 check_error "$@"; }
expect_late_error() { LATE=1 check_error "$@"; }
check_error() {
  local name=$1 pat=$2; shift 2
  "$@" >"$W/out" 2>"$W/err"; local rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then fail "$name: exit $rc"; cat "$W/err"; return; fi
  if [ "$LATE" = 1 ]; then tail -n 1 "$W/err" >"$W/err1"; mv "$W/err1" "$W/err"; fi
  if [ "$(wc -l <"$W/err")" -ne 1 ]; then fail "$name: expected one line on stderr"; cat "$W/err"; return; fi
  if ! grep -q -- "$pat" "$W/err"; then fail "$name: message lacks '$pat'"; cat "$W/err"; return; fi
  pass "$name: $(cat "$W/err")"
}

for i in $(seq 1 1500); do
  echo "the quick brown fox number $i jumps over the lazy dog, and the dog sleeps."
  echo
done >"$W/text.txt"
$G bpe-train --in "$W/text.txt" --vocab-size 320 --out "$W/vocab" >/dev/null 2>&1 || { echo "bpe-train failed"; exit 1; }
$G tokenize --vocab "$W/vocab" --in "$W/text.txt" --out "$W/shards" --name t --val-tokens 2048 >/dev/null 2>&1 || { echo "tokenize failed"; exit 1; }
TRAIN="$W/shards/t_train_*.bin"
VAL="$W/shards/t_val_*.bin"
COMMON=(--model gpt2 --layers 2 --heads 2 --embd 32 --ctx 32 --vocab "$W/vocab" --data "$TRAIN" --val-data "$VAL"
        --batch 2 --seq 16 --lr 3e-3 --schedule cosine --warmup 2 --eval-every 4 --eval-batches 2 --shuffle --seed 7
        --threads 2)

# 1. an uninterrupted 8-step run
if $G train "${COMMON[@]}" --steps 8 --log "$W/full.jsonl" --save "$W/full.safetensors" 2>"$W/train.err"; then
  pass "train 8 steps"
else
  fail "train 8 steps"; cat "$W/train.err"
fi
grep -q 'step     8/8' "$W/train.err" && pass "progress line" || fail "progress line"
# the memory line says what the OS made of the slabs' huge-page advice (a tiny model's slabs are under
# 4 MiB, so "0.0 of ..." is right here; a number, or "unknown" with its reason, never nothing)
grep -Eq 'memory: .*; slabs in 2 MiB pages: ([0-9.]+ of [0-9.]+ MiB \(transparent huge pages: |unknown \()' "$W/train.err" &&
  pass "memory line: huge pages" || fail "memory line lacks the huge pages: $(grep memory: "$W/train.err")"
[ "$(grep -c '"loss"' "$W/full.jsonl")" -eq 8 ] && pass "8 train records" || fail "8 train records"
[ "$(grep -c '"val_loss"' "$W/full.jsonl")" -eq 3 ] && pass "3 val records (steps 0, 4, 8)" || fail "val records"
first=$(grep '"step":0,"loss"' "$W/full.jsonl" | sed 's/.*"loss":\([0-9.]*\).*/\1/')
last=$(grep '"step":7,"loss"' "$W/full.jsonl" | sed 's/.*"loss":\([0-9.]*\).*/\1/')
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }' && pass "loss decreases ($first -> $last)" || fail "loss did not decrease ($first -> $last)"

# 2. the same 8-step run, keeping the checkpoint of step 5, resumed from it
# with 1 thread instead of 2: the losses must be identical
$G train "${COMMON[@]}" --steps 8 --save "$W/ck_{step}.safetensors" --save-every 5 --log /dev/null 2>/dev/null
[ -f "$W/ck_5.safetensors" ] && [ -f "$W/ck_8.safetensors" ] && pass "--save {step} keeps ck_5 and ck_8" || fail "--save {step}"
# (seed and shuffling come from the checkpoint: not repeated here)
if $G train --resume "$W/ck_5.safetensors" --data "$TRAIN" --val-data "$VAL" --batch 2 --seq 16 --lr 3e-3 \
     --schedule cosine --warmup 2 --eval-every 4 --eval-batches 2 --threads 1 --steps 8 \
     --log "$W/resumed.jsonl" 2>"$W/resume.err"; then
  pass "resume"
else
  fail "resume"; cat "$W/resume.err"
fi
for s in 5 6 7; do
  a=$(grep "\"step\":$s,\"loss\"" "$W/full.jsonl" | sed 's/,"ms".*//')
  b=$(grep "\"step\":$s,\"loss\"" "$W/resumed.jsonl" | sed 's/,"ms".*//')
  [ -n "$a" ] && [ "$a" = "$b" ] && pass "resumed step $s identical: $b" || fail "resumed step $s: '$a' vs '$b'"
done
a=$(grep '"step":8,"val_loss"' "$W/full.jsonl"); b=$(grep '"step":8,"val_loss"' "$W/resumed.jsonl")
[ -n "$a" ] && [ "$a" = "$b" ] && pass "final val loss identical after resume (and with 1 vs 2 threads)" || fail "final val loss: '$a' vs '$b'"

expect_error "resume with a different seed" "contradicts" $G train --resume "$W/ck_5.safetensors" --data "$TRAIN" --steps 8 --seed 8

# 2a. gradient accumulation: B=4 equals 2 micro-batches of B=2 (sequential data:
# the same rows), up to fp32 summation order
SEQUENTIAL=()
for a in "${COMMON[@]}"; do [ "$a" = --shuffle ] || SEQUENTIAL+=("$a"); done
$G train "${SEQUENTIAL[@]}" --steps 3 --batch 4 --log "$W/b4.jsonl" 2>/dev/null
$G train "${SEQUENTIAL[@]}" --steps 3 --batch 2 --accum 2 --log "$W/b2a2.jsonl" 2>/dev/null
for s in 0 1 2; do
  a=$(grep "\"step\":$s,\"loss\"" "$W/b4.jsonl" | sed 's/.*"loss":\([0-9.]*\).*/\1/')
  b=$(grep "\"step\":$s,\"loss\"" "$W/b2a2.jsonl" | sed 's/.*"loss":\([0-9.]*\).*/\1/')
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= 1e-5 * a) }' &&
    pass "accum step $s: B=4 loss $a == B=2 x 2 loss $b" || fail "accum step $s: '$a' vs '$b'"
done

# 2b. a profiled training run writes the profiler's outputs
if $G train "${COMMON[@]}" --steps 3 --profile-out "$W/prof" 2>/dev/null && [ -s "$W/prof/trace.json" ] &&
   [ -s "$W/prof/summary.json" ] && grep -q "<svg" "$W/prof/report.html"; then
  pass "train --profile-out"
else
  fail "train --profile-out"
fi

# 3. eval
if $G eval --model "$W/full.safetensors" --data "$VAL" --batch 2 --seq 16 >"$W/eval.out" 2>&1 && grep -q perplexity "$W/eval.out"; then
  pass "eval: $(cat "$W/eval.out")"
else
  fail "eval"; cat "$W/eval.out"
fi

# 4. bad input
expect_error "seq longer than context" "--seq" $G train "${COMMON[@]}" --steps 1 --seq 64
expect_error "zero batch" "--batch" $G train "${COMMON[@]}" --steps 1 --batch 0
expect_error "negative steps" "--steps" $G train "${COMMON[@]}" --steps -3
expect_error "embd not divisible by heads" "divisible" $G train --model gpt2 --layers 1 --heads 3 --embd 32 --ctx 16 --vocab 320 --data "$TRAIN" --steps 1 --batch 1 --seq 8
expect_error "token id >= vocab" "outside the model's vocabulary" $G train --model gpt2 --layers 1 --heads 2 --embd 16 --ctx 16 --vocab 100 --data "$TRAIN" --steps 1 --batch 1 --seq 8
expect_error "missing data" "no such file" $G train "${COMMON[@]}" --steps 1 --data "$W/nope_*.bin"
expect_error "unknown schedule" "--schedule" $G train "${COMMON[@]}" --steps 1 --schedule linear
expect_error "unknown option" "unknown option" $G train "${COMMON[@]}" --steps 1 --bogus 3
expect_error "unknown model name" "unknown model" $G train --model gpt5 --data "$TRAIN" --steps 1
expect_error "unknown backend" "backend" $G train "${COMMON[@]}" --steps 1 --backend tpu
expect_error "unwritable save path" "cannot write" $G train "${COMMON[@]}" --steps 1 --save /nonexistent-dir/x.safetensors
head -c 3000 "$W/shards/t_train_000000.bin" >"$W/short.bin"
expect_error "shard size disagrees with header" "header says" $G train "${COMMON[@]}" --steps 1 --data "$W/short.bin"
expect_error "resume from a non-checkpoint" "vocab.json" $G train --resume "$W/vocab/vocab.json" --data "$TRAIN" --steps 1
$G convert "$W/full.safetensors" "$W/full_llmc.bin" >/dev/null 2>&1 || fail "convert to llm.c .bin"
expect_error "resume from an llm.c .bin" "resume needs a gpt2c checkpoint" $G train --resume "$W/full_llmc.bin" --data "$TRAIN" --steps 9
expect_error "eval of a truncated checkpoint" "model.safetensors\|trunc\|short" bash -c "head -c 5000 '$W/full.safetensors' > '$W/model.safetensors'; exec $G eval --model '$W/model.safetensors' --data '$VAL'"

# 5. a save that fails midway leaves the previous checkpoint untouched
cp "$W/full.safetensors" "$W/before.safetensors"
expect_late_error "write fails midway" "simulated" env GPT2C_FAULT_WRITE_AFTER=20000 $G train "${COMMON[@]}" --steps 2 --save "$W/full.safetensors"
cmp -s "$W/full.safetensors" "$W/before.safetensors" && pass "previous checkpoint byte-identical after a failed save" || fail "previous checkpoint changed"
ls "$W"/full.safetensors.tmp.* >/dev/null 2>&1 && fail "temporary file left behind" || pass "no temporary left behind"

echo "cli_train: $fails failed"
[ $fails -eq 0 ]
