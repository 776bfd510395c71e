#!/usr/bin/env bash
# LoRA from the command line: train --lora-rank writes a PEFT adapter directory,
# --resume continues it exactly (dropout masks included), QLoRA trains over a
# quantized base, --adapter on eval / generate, merge; and the one-line errors
# of bad input (unknown target module, adapter disagreeing with the base, options
# without --lora-rank), nothing overwritten.
set -u
G="$1"
"$G" --version | grep -q -- "+jansson" || { echo "SKIP: safetensors needs jansson"; exit 77; }
F="${GPT2C_FIXTURES:?}"
. "$(dirname "$0")/lib/cli.sh"
# token shard of pseudo-random ids < 48 (llm.c format)
token_shard "$W/d.bin" 2048 48 37 7
BASE="$F/hf_dir"
T=(train --model "$BASE" --data "$W/d.bin" --batch 2 --seq 12 --eval-every 0 --lr 1e-2 --threads 1)

"$G" "${T[@]}" --steps 6 --lora-rank 4 --lora-alpha 8 --lora-dropout 0.1 --lora-targets c_attn,mlp.c_proj \
    --save "$W/full" 2>"$W/log" || { cat "$W/log"; fail=1; }
check "train --lora-rank --save DIR writes a PEFT adapter directory" \
    '[ -s "$W/full/adapter_model.safetensors" ] && [ -s "$W/full/adapter_config.json" ] && [ -s "$W/full/gpt2c_optimizer.safetensors" ]'
check "adapter_config.json: r, lora_alpha, target_modules, fan_in_fan_out" \
    'grep -q "\"r\": 4" "$W/full/adapter_config.json" && grep -q "\"lora_alpha\": 8" "$W/full/adapter_config.json" && grep -q "mlp.c_proj" "$W/full/adapter_config.json" && grep -q "\"fan_in_fan_out\": true" "$W/full/adapter_config.json"'
check "the log says what trains and that the base holds no gradients or moments" \
    'grep -q "LoRA rank 4" "$W/log" && grep -q "gradients 0.0, AdamW moments 0.0" "$W/log"'
# resume: 3 steps, then 3 more from the adapter = 6 in one go, bit for bit
"$G" "${T[@]}" --steps 3 --lora-rank 4 --lora-alpha 8 --lora-dropout 0.1 --lora-targets c_attn,mlp.c_proj \
    --save "$W/half" 2>/dev/null || fail=1
"$G" "${T[@]}" --steps 6 --resume "$W/half" --save "$W/half" 2>"$W/rlog" || { cat "$W/rlog"; fail=1; }
check "--resume ADAPTER continues exactly (adapter and optimizer state equal an uninterrupted run)" \
    'cmp -s "$W/full/adapter_model.safetensors" "$W/half/adapter_model.safetensors" && cmp -s "$W/full/gpt2c_optimizer.safetensors" "$W/half/gpt2c_optimizer.safetensors"'

# QLoRA: a base quantized on load (nf4 needs 64-wide rows: a fresh 64-channel base)
"$G" train --layers 2 --heads 2 --embd 64 --ctx 32 --vocab 48 --data "$W/d.bin" --batch 2 --seq 12 --steps 1 \
    --eval-every 0 --threads 1 --save "$W/b64.safetensors" 2>/dev/null || fail=1
"$G" train --model "$W/b64.safetensors" --data "$W/d.bin" --batch 2 --seq 12 --steps 2 --eval-every 0 --threads 1 \
    --lora-rank 2 --quant nf4 --save "$W/q" 2>"$W/qlog" || { cat "$W/qlog"; fail=1; }
check "QLoRA: train --quant nf4 --lora-rank trains adapters over the nf4 base" \
    '[ -s "$W/q/adapter_model.safetensors" ] && grep -q "quantized nf4" "$W/qlog"'
"$G" quantize --model "$W/b64.safetensors" --format nf4 --out "$W/b64q.safetensors" >/dev/null 2>&1 || fail=1
"$G" train --model "$W/b64q.safetensors" --data "$W/d.bin" --batch 2 --seq 12 --steps 1 --eval-every 0 --threads 1 \
    --lora-rank 2 --save "$W/q2" 2>/dev/null || fail=1
check "QLoRA: train --model QUANTIZED.safetensors --lora-rank" '[ -s "$W/q2/adapter_model.safetensors" ]'

# --adapter (unmerged) = the merged checkpoint: eval's loss, generate's greedy tokens
"$G" merge --model "$BASE" --adapter "$W/full" --out "$W/merged.safetensors" >/dev/null || fail=1
E=(eval --data "$W/d.bin" --batch 2 --seq 12 --batches 3 --threads 1)
l1=$("$G" "${E[@]}" --model "$BASE" --adapter "$W/full" | awk '{print $2}')
l2=$("$G" "${E[@]}" --model "$W/merged.safetensors" | awk '{print $2}')
l0=$("$G" "${E[@]}" --model "$BASE" | awk '{print $2}')
check "eval --adapter equals eval of the merged file ($l1 vs $l2), and differs from the base ($l0)" \
    'awk -v a="$l1" -v b="$l2" -v c="$l0" "BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-5 && a != c) }"'
GEN=(generate --prompt-ids 1,2,3,4 --max-tokens 8 --temperature 0 --threads 1)
g1=$("$G" "${GEN[@]}" --model "$BASE" --adapter "$W/full" 2>/dev/null)
g2=$("$G" "${GEN[@]}" --model "$W/merged.safetensors" 2>/dev/null)
check "generate --adapter (greedy) equals the merged model's tokens" '[ -n "$g1" ] && [ "$g1" = "$g2" ]'
# prune the adapter 80%: an adapter directory that loads again
"$G" prune --model "$BASE" --adapter "$W/full" --target lora --sparsity 0.8 --out "$W/pruned" >"$W/plog" || fail=1
check "prune --target lora: 80% of the adapter weights zero, the pruned adapter evaluates" \
    'grep -qE "zero \((79\.9|80\.0)" "$W/plog" && "$G" "${E[@]}" --model "$BASE" --adapter "$W/pruned" >/dev/null'

# bad input: one line, non-zero exit, nothing overwritten
cp -r "$W/full" "$W/keep"
bad "unknown target module" "q_proj" "${T[@]}" --steps 1 --lora-rank 4 --lora-targets c_attn,q_proj --save "$W/keep"
bad "--lora-alpha without --lora-rank" "needs --lora-rank" "${T[@]}" --steps 1 --lora-alpha 4 --save "$W/x"
bad "quantized base without LoRA" "quantized bases are frozen" "${T[@]/$BASE/$W/b64q.safetensors}" --steps 1
bad "--quant without --lora-rank" "add --lora-rank" "${T[@]}" --steps 1 --quant nf4
bad "resume an adapter on another base" "shape" train --model "$W/b64.safetensors" --data "$W/d.bin" --batch 2 \
    --seq 12 --steps 8 --resume "$W/keep" --save "$W/keep"
bad "resume an adapter without its base" "give its base model with --model" train --data "$W/d.bin" --steps 8 \
    --resume "$W/keep"
echo keep > "$W/exists.safetensors"
bad "merge: adapter on another base" "shape" merge --model "$W/b64.safetensors" --adapter "$W/full" --out "$W/exists.safetensors"
bad "merge: a quantized base" "quantized" merge --model "$W/b64q.safetensors" --adapter "$W/q2" --out "$W/exists.safetensors"
bad "eval --adapter: not an adapter" "not a directory" eval --model "$BASE" --adapter "$W/d.bin" --data "$W/d.bin"
bad "prune --target lora: sparsity 1" "outside" prune --model "$BASE" --adapter "$W/full" --target lora --sparsity 1 --out "$W/p2"
check "... merge left --out as it was" '[ "$(cat "$W/exists.safetensors")" = keep ] && [ ! -e "$W/p2" ]'
check "nothing overwritten by the refused runs" \
    'cmp -s "$W/full/adapter_model.safetensors" "$W/keep/adapter_model.safetensors" && [ ! -e "$W/x" ]'
exit $fail
