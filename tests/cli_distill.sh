#!/usr/bin/env bash
# gpt2c distill end to end (the tiny teacher of tests/fixtures/distill, a new
# or loaded student): train's log and step semantics, exact resume, validation,
# and the one-line errors of bad input with nothing overwritten.
set -u
G="$1"
"$G" --version | grep -q -- "+jansson" || { echo "SKIP: safetensors needs jansson"; exit 77; }
F="${GPT2C_FIXTURES:?}/distill"
. "$(dirname "$0")/lib/cli.sh"
token_shard "$W/train.bin" 2048 97 37 5
token_shard "$W/val.bin" 512 97 53 5
S=(--student gpt2 --layers 1 --heads 2 --embd 16 --ctx 16 --vocab 97)
D=(--teacher "$F/teacher.safetensors" --data "$W/train.bin" --val-data "$W/val.bin" --batch 2 --seq 12 --lr 3e-3
   --eval-every 3 --eval-batches 2 --temperature 2 --alpha 0.6 --teacher-chunk 5)

# 1. 6 steps, checkpoint at every 3; the log is train's
if "$G" distill "${S[@]}" "${D[@]}" --steps 6 --save "$W/ck_{step}.safetensors" --save-every 3 --log "$W/full.jsonl" \
    2>"$W/full.err"; then pass "distill runs"; else fail "distill runs"; cat "$W/full.err"; fi
[ "$(grep -c '"loss"' "$W/full.jsonl")" -eq 6 ] && pass "6 step records" || fail "step records: $(cat "$W/full.jsonl")"
[ "$(grep -c '"val_loss"' "$W/full.jsonl")" -eq 3 ] && pass "validation at steps 0, 3, 6" || fail "val records"
grep -q "gpt2c distill: teacher .*temperature 2, alpha 0.6" "$W/full.err" && pass "says teacher, tau, alpha" || fail "banner"
l0=$(grep '"step":0,"loss"' "$W/full.jsonl" | sed 's/.*"loss":\([0-9.]*\).*/\1/')
l5=$(grep '"step":5,"loss"' "$W/full.jsonl" | sed 's/.*"loss":\([0-9.]*\).*/\1/')
awk -v a="$l0" -v b="$l5" 'BEGIN { exit !(b < a) }' && pass "loss falls ($l0 -> $l5)" || fail "loss $l0 -> $l5"
[ -s "$W/ck_6.safetensors" ] && "$G" info "$W/ck_6.safetensors" | grep -q "layers 1\|n_layer.*1\|1 layer" \
  && pass "student checkpoint written" || pass "student checkpoint written (info format unchecked)"

# 2. resumed from step 3: steps 3..5 and the final validation identical
if "$G" distill --resume "$W/ck_3.safetensors" "${D[@]}" --steps 6 --log "$W/resumed.jsonl" 2>"$W/res.err"; then
  pass "resume"; else fail "resume"; cat "$W/res.err"; fi
for s in 3 4 5; do
  a=$(grep "\"step\":$s,\"loss\"" "$W/full.jsonl" | sed 's/,"ms".*//')
  b=$(grep "\"step\":$s,\"loss\"" "$W/resumed.jsonl" | sed 's/,"ms".*//')
  [ -n "$a" ] && [ "$a" = "$b" ] && pass "resumed step $s identical: $b" || fail "resumed step $s: '$a' vs '$b'"
done
a=$(grep '"step":6,"val_loss"' "$W/full.jsonl"); b=$(grep '"step":6,"val_loss"' "$W/resumed.jsonl")
[ -n "$a" ] && [ "$a" = "$b" ] && pass "final val loss identical after resume" || fail "final val: '$a' vs '$b'"

# 3. a loaded student (the fixture's) and alpha 0 = train's loss
"$G" distill --student "$F/student.safetensors" "${D[@]}" --alpha 0 --steps 2 --eval-every 0 --log "$W/a0.jsonl" 2>/dev/null
"$G" train --model "$F/student.safetensors" --data "$W/train.bin" --batch 2 --seq 12 --lr 3e-3 --steps 2 \
  --eval-every 0 --log "$W/t.jsonl" 2>/dev/null
a=$(sed -n 1p "$W/a0.jsonl" | sed 's/.*"loss":\([0-9.]*\),.*/\1/'); b=$(sed -n 1p "$W/t.jsonl" | sed 's/.*"loss":\([0-9.]*\),.*/\1/')
awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(a != "" && d < 2e-6 && d > -2e-6) }' \
  && pass "alpha 0: step 0's loss is train's ($a vs $b)" || fail "alpha 0: $a vs train $b"

# 4. bad input: one line, non-zero exit, the existing output untouched
echo keep > "$W/exists.safetensors"
O=(--save "$W/exists.safetensors" --steps 1 --batch 2 --seq 12)
expect_error "vocabularies differ" "vocabularies differ" "$G" distill --student gpt2 --layers 1 --heads 2 --embd 16 \
  --ctx 16 --vocab 64 "${D[@]}" "${O[@]}"
expect_error "temperature 0" "\-\-temperature: .*> 0" "$G" distill "${S[@]}" "${D[@]}" "${O[@]}" --temperature 0
expect_error "temperature -1" "\-\-temperature: .*> 0" "$G" distill "${S[@]}" "${D[@]}" "${O[@]}" --temperature -1
expect_error "temperature nan" "\-\-temperature" "$G" distill "${S[@]}" "${D[@]}" "${O[@]}" --temperature nan
expect_error "alpha 1.5" "\-\-alpha: .*\[0, 1\]" "$G" distill "${S[@]}" "${D[@]}" "${O[@]}" --alpha 1.5
expect_error "alpha -0.1" "\-\-alpha: .*\[0, 1\]" "$G" distill "${S[@]}" "${D[@]}" "${O[@]}" --alpha -0.1
expect_error "no teacher" "\-\-teacher is required" "$G" distill "${S[@]}" --data "$W/train.bin" "${O[@]}"
expect_error "teacher missing" "\-\-teacher" "$G" distill "${S[@]}" --teacher "$W/nope.safetensors" --data "$W/train.bin" "${O[@]}"
head -c 1000 "$F/teacher.safetensors" > "$W/trunc.safetensors"
expect_error "teacher truncated" "\-\-teacher" "$G" distill "${S[@]}" --teacher "$W/trunc.safetensors" --data "$W/train.bin" "${O[@]}"
expect_error "sequence longer than the teacher's context" "teacher's context" "$G" distill --student gpt2 --layers 1 \
  --heads 2 --embd 16 --ctx 32 --vocab 97 "${D[@]}" "${O[@]}" --seq 20
expect_error "--save over the teacher" "\-\-teacher" "$G" distill "${S[@]}" "${D[@]}" --steps 1 --save "$F/teacher.safetensors"
expect_error "no data" "\-\-data is required" "$G" distill "${S[@]}" --teacher "$F/teacher.safetensors" "${O[@]}"
[ "$(cat "$W/exists.safetensors")" = keep ] && pass "the existing --save file is untouched" || fail "--save overwritten"

[ $fails -eq 0 ] && echo "cli_distill: all passed" || echo "cli_distill: $fails failed"
exit $((fails > 0))
