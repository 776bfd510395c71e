#!/usr/bin/env bash
# gpt2c prune / info sparsity / train --keep-sparsity, and the one-line errors
# of bad input (sparsity outside [0, 1), unknown pattern / scope / target /
# method, --keep-sparsity on a model with no zeros), nothing overwritten.
set -u
G="$1"
"$G" --version | grep -q -- "+jansson" || { echo "SKIP: safetensors needs jansson"; exit 77; }
F="${GPT2C_FIXTURES:?}/prune"
. "$(dirname "$0")/lib/cli.sh"
# token shard of pseudo-random ids < 64 (llm.c format)
token_shard "$W/d.bin" 1024 64 37 7

"$G" prune --model "$F/base.safetensors" --sparsity 0.6 --scope global --out "$W/g.safetensors" >"$W/out" || fail=1
check "prune reports the count (3686 of 6144)" 'grep -q "3686 of 6144" "$W/out"'
check "info prints the sparsity of each linear weight" \
    '[ "$("$G" info "$W/g.safetensors" | grep -c "\.weight .*sparsity")" -eq 10 ]'
check "info: the base has no zeros in its linear weights" \
    '! "$G" info "$F/base.safetensors" | grep "c_attn.weight" | grep -qv "sparsity 0.00%"'
"$G" prune --model "$F/base.safetensors" --pattern 2:4 --out "$W/s24.safetensors" >/dev/null || fail=1
check "2:4: every linear weight 50% sparse" \
    '[ "$("$G" info "$W/s24.safetensors" | grep -E "(c_attn|c_proj|c_fc)\.weight" | grep -c "sparsity 50.00%")" -eq 8 ]'
"$G" prune --model "$F/base.safetensors" --sparsity 0.7 --scope layer --out "$W/l.safetensors" >/dev/null || fail=1
check "layer: h.0.mlp.c_fc.weight is round(0.7 * 1024) = 717 zeros (70.02%)" \
    '"$G" info "$W/l.safetensors" | grep "h.0.mlp.c_fc.weight" | grep -q "sparsity 70.02%"'

# train --keep-sparsity: the pruned weights stay exactly zero; without it they move
"$G" train --model "$W/l.safetensors" --data "$W/d.bin" --steps 3 --batch 2 --seq 16 --eval-every 0 --lr 1e-2 \
    --keep-sparsity --save "$W/kept.safetensors" >/dev/null 2>&1 || fail=1
"$G" train --model "$W/l.safetensors" --data "$W/d.bin" --steps 3 --batch 2 --seq 16 --eval-every 0 --lr 1e-2 \
    --save "$W/free.safetensors" >/dev/null 2>&1 || fail=1
lw() { "$G" info "$1" | grep -E "(c_attn|c_proj|c_fc)\.weight" | sed 's/.*sparsity //'; }
check "--keep-sparsity: every linear weight's sparsity unchanged after 3 steps" \
    '[ -s "$W/kept.safetensors" ] && [ "$(lw "$W/l.safetensors")" = "$(lw "$W/kept.safetensors")" ]'
check "without it AdamW moves the pruned weights" \
    '[ -s "$W/free.safetensors" ] && [ "$(lw "$W/l.safetensors")" != "$(lw "$W/free.safetensors")" ]'

# bad input: one line, non-zero exit, the existing output untouched
echo keep > "$W/exists.safetensors"
B=(prune --model "$F/base.safetensors" --out "$W/exists.safetensors")
bad "sparsity 1" "outside \[0, 1)" "${B[@]}" --sparsity 1
bad "sparsity -0.5" "outside \[0, 1)" "${B[@]}" --sparsity -0.5
bad "2:4 at 0.8" "2:4 pattern prunes exactly 0.5" "${B[@]}" --sparsity 0.8 --pattern 2:4
bad "unknown pattern" "unknown pattern" "${B[@]}" --sparsity 0.5 --pattern 4:8
bad "unknown scope" "unknown scope" "${B[@]}" --sparsity 0.5 --scope row
bad "unknown target" "unknown target" "${B[@]}" --sparsity 0.5 --target biases
bad "--target lora without --adapter" "needs --adapter" "${B[@]}" --sparsity 0.5 --target lora
bad "unknown method" "unknown method" "${B[@]}" --sparsity 0.5 --method l2
bad "no sparsity" "--sparsity is required" "${B[@]}"
bad "no --out" "--out is required" prune --model "$F/base.safetensors" --sparsity 0.5
bad "missing model" "nope.safetensors" prune --model "$W/nope.safetensors" --sparsity 0.5 --out "$W/x.safetensors"
check "nothing overwritten by the refused runs" '[ "$(cat "$W/exists.safetensors")" = keep ] && [ ! -e "$W/x.safetensors" ]'
bad "--keep-sparsity with no zeros" "hold no zeros" train --model "$F/base.safetensors" --data "$W/d.bin" --steps 1 \
    --batch 2 --seq 16 --keep-sparsity --save "$W/y.safetensors"
check "... and no checkpoint written" '[ ! -e "$W/y.safetensors" ]'
exit $fail
