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
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
bad() { # bad NAME WANT-IN-MESSAGE gpt2c-args...
    local name="$1" want="$2"; shift 2
    local err; err=$("$G" "$@" 2>&1 >/dev/null); local rc=$?
    if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && printf '%s' "$err" | grep -q -- "$want"; then
        echo "ok: $name -> $err"
    else
        echo "FAIL: $name (rc=$rc): $err"; fail=1
    fi
}
# token shard of pseudo-random ids < 48 (llm.c format)
le32() { printf "\\x$(printf %02x $(($1 & 255)))\\x$(printf %02x $((($1 >> 8) & 255)))\\x$(printf %02x $((($1 >> 16) & 255)))\\x$(printf %02x $((($1 >> 24) & 255)))"; }
{ le32 20240520; le32 1; le32 2048; head -c $((253 * 4)) /dev/zero
  for ((i = 0; i < 2048; i++)); do v=$(((i * 37 + i / 7) % 48)); printf "\\x$(printf %02x $((v & 255)))\\x00"; done
} > "$W/d.bin"
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
check "nothing overwritten by the refused runs" \
    'cmp -s "$W/full/adapter_model.safetensors" "$W/keep/adapter_model.safetensors" && [ ! -e "$W/x" ]'
exit $fail
