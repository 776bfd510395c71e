#!/usr/bin/env bash
# gpt2c quantize / info / eval / generate / bench generate on quantized models,
# and the one-line errors of bad input (--quant on a quantized file, train on
# one, unknown formats, a block that does not divide the rows).
set -u
G="$1"
"$G" --version | grep -q -- "+jansson" || { echo "SKIP: safetensors needs jansson"; exit 77; }
. "$(dirname "$0")/lib/cli.sh"
TINY=(--model gpt2 --layers 2 --heads 2 --embd 128 --ctx 64 --vocab 300)
# token shards of pseudo-random ids < 300 (llm.c format)
token_shard "$W/val.bin" 1024 300 37 7

"$G" train "${TINY[@]}" --data "$W/val.bin" --steps 1 --batch 2 --seq 32 --eval-every 0 --save "$W/fp32.safetensors" >/dev/null 2>&1
check "an fp32 checkpoint to quantize" '[ -f "$W/fp32.safetensors" ]'
for f in q8 q4 nf4; do
    "$G" quantize --model "$W/fp32.safetensors" --format $f --out "$W/$f.safetensors" >/dev/null || fail=1
    check "$f: quantize writes a file" '[ -s "$W/$f.safetensors" ]'
    check "$f: info shows the tensor formats and bits per weight" \
        '"$G" info "$W/$f.safetensors" | grep -q "c_attn.weight  *$f/" && "$G" info "$W/$f.safetensors" | grep -q "bits per parameter"'
    e1=$("$G" eval --model "$W/$f.safetensors" --data "$W/val.bin" --batch 2 --seq 32 | cut -d' ' -f2)
    e2=$("$G" eval --model "$W/fp32.safetensors" --quant $f --data "$W/val.bin" --batch 2 --seq 32 | cut -d' ' -f2)
    check "$f: eval of the file = eval --quant $f of the fp32 checkpoint ($e1, $e2)" '[ -n "$e1" ] && [ "$e1" = "$e2" ]'
    g1=$("$G" generate --model "$W/$f.safetensors" --prompt-ids 11,12,13 --max-tokens 8 --temperature 0)
    g2=$("$G" generate --model "$W/fp32.safetensors" --quant $f --prompt-ids 11,12,13 --max-tokens 8 --temperature 0)
    check "$f: generate from the file = generate --quant $f" '[ -n "$g1" ] && [ "$g1" = "$g2" ]'
    check "$f: bench generate reports the format" \
        '"$G" bench generate --model "$W/$f.safetensors" --prompt-len 8 --tokens 4 --runs 1 --json | grep -q "\"format\":\"$f\""'
done
"$G" quantize --model "$W/fp32.safetensors" --format nf4 --no-double-quant --block 128 --keep wte --out "$W/nf4b.safetensors" >/dev/null || fail=1
check "nf4 --block 128 --no-double-quant --keep wte" \
    '"$G" info "$W/nf4b.safetensors" | grep -q "c_fc.weight  *nf4/128" && "$G" info "$W/nf4b.safetensors" | grep -q "wte.weight  *f32"'
bad "--quant on a quantized file" "already quantized" eval --model "$W/q4.safetensors" --quant q8 --data "$W/val.bin"
bad "quantize a quantized file" "already quantized" quantize --model "$W/q4.safetensors" --format q8 --out "$W/x.safetensors"
bad "train on a quantized checkpoint" "frozen" train --model "$W/nf4.safetensors" --data "$W/val.bin" --steps 1
bad "unknown --format" "unknown format" quantize --model "$W/fp32.safetensors" --format q3 --out "$W/x.safetensors"
bad "unknown --quant" "unknown format" generate --model "$W/fp32.safetensors" --quant int4 --prompt-ids 1
bad "a block that does not divide the rows" "does not divide" quantize --model "$W/fp32.safetensors" --format q8 --block 96 --out "$W/x.safetensors"
bad "--double-quant on q8" "nf4 only" quantize --model "$W/fp32.safetensors" --format q8 --double-quant --out "$W/x.safetensors"
# profile --quant / a quantized file: the inference passes (prefill + decode) are profiled
P=(--seq 8 --decode 2 --batch 2 --trials 1 --warmup 0 --no-peak --no-counters --threads 1)
check "profile --quant q4 profiles inference (quantized matmuls, B x (T + decode) tokens)" \
    '"$G" profile "${TINY[@]}" --quant q4 "${P[@]}" 2>/dev/null | grep -q "B=2 T=10" && "$G" profile "${TINY[@]}" --quant q4 "${P[@]}" 2>/dev/null | grep -q "matmul_qkv"'
check "profile --infer times the KV-cache write as its own op, apart from attention" \
    'out=$("$G" profile "${TINY[@]}" --infer "${P[@]}" 2>/dev/null) && grep -q "^kv_write " <<<"$out" && grep -q "^attention " <<<"$out"'
check "profile of a quantized file profiles its inference" \
    '"$G" profile --model "$W/nf4.safetensors" "${P[@]}" 2>&1 | grep -q "inference of .*(nf4 weights)"'
bad "profile --quant on a quantized file" "already quantized" profile --model "$W/q8.safetensors" --quant q4 "${P[@]}"
bad "profile --quant unknown" "unknown format" profile "${TINY[@]}" --quant q5 "${P[@]}"
bad "profile --infer with a thread sweep" "sweeps" profile "${TINY[@]}" --infer --seq 8 --threads 1,2 --no-peak --no-counters
check "profile --decode-only: the decode steps alone (B x decode tokens, no prefill in the step)" \
    '"$G" profile "${TINY[@]}" --quant q4 "${P[@]}" --decode-only 2>/dev/null | grep -q "B=2 T=2"'
bad "profile --decode-only of training" "--decode-only" profile "${TINY[@]}" --decode-only --seq 8 --no-peak --no-counters --threads 1
bad "profile --decode-only without decode steps" "--decode >= 1" profile "${TINY[@]}" --quant q4 --decode-only --decode 0 --seq 8 --no-peak --no-counters --threads 1
bad "profile --infer beyond the context" "exceeds the model's context" profile "${TINY[@]}" --infer --seq 60 --decode 10 --no-peak --no-counters --threads 1
check "bench generate reports the bytes per step and the bandwidth bound fields" \
    '"$G" bench generate --model "$W/q4.safetensors" --prompt-len 8 --tokens 4 --runs 1 --no-peak --json | grep -q "\"decode_bytes_per_step_mb\":.*\"decode_pct_of_bound\""'
check "bench generate without a bandwidth figure says why" \
    '"$G" bench generate --model "$W/q4.safetensors" --prompt-len 8 --tokens 4 --runs 1 --no-peak | grep -q "bound unavailable (--no-peak)"'
# the KV cache type: bf16 by default with quantized weights, f32 on request (and for fp32 weights)
check "bench generate: a quantized model's default KV cache is bf16" \
    '"$G" bench generate --model "$W/q4.safetensors" --prompt-len 8 --tokens 4 --runs 1 --no-peak --json | grep -q "\"kv_cache\":\"bf16\""'
check "bench generate --kv-cache f32 on a quantized model" \
    '"$G" bench generate --model "$W/q4.safetensors" --prompt-len 8 --tokens 4 --runs 1 --no-peak --kv-cache f32 --json | grep -q "\"kv_cache\":\"f32\""'
check "bench generate: an fp32 model's default KV cache is f32" \
    '"$G" bench generate --model "$W/fp32.safetensors" --prompt-len 8 --tokens 4 --runs 1 --no-peak --json | grep -q "\"kv_cache\":\"f32\""'
g1=$("$G" generate --model "$W/fp32.safetensors" --kv-cache bf16 --prompt-ids 11,12,13 --max-tokens 8 --temperature 0)
check "generate --kv-cache bf16 on an fp32 model produces tokens" '[ -n "$g1" ]'
bad "unknown --kv-cache" "--kv-cache 'int4': unknown cache type" generate --model "$W/q8.safetensors" --kv-cache int4 --prompt-ids 1
# --quant-act: f32 activations (exactly the dequantized weights) or int8 (where VNNI runs; else a note and f32)
check "bench generate --quant-act f32 reports it" \
    '"$G" bench generate --model "$W/q4.safetensors" --prompt-len 8 --tokens 4 --runs 1 --no-peak --quant-act f32 --json | grep -q "\"quant_act\":\"f32\""'
check "bench generate --quant-act f32 also makes the prefill fp32" \
    '"$G" bench generate --model "$W/q4.safetensors" --prompt-len 20 --tokens 2 --runs 1 --no-peak --quant-act f32 --json | grep -q "\"quant_prefill\":\"f32\""'
g3=$("$G" generate --model "$W/nf4.safetensors" --quant-act f32 --prompt-ids 11,12,13 --max-tokens 8 --temperature 0)
g4=$("$G" generate --model "$W/nf4.safetensors" --quant-act int8 --prompt-ids 11,12,13 --max-tokens 8 --temperature 0 2>/dev/null)
check "generate --quant-act f32 and int8 both produce tokens" '[ -n "$g3" ] && [ -n "$g4" ]'
bad "unknown --quant-act" "--quant-act 'int4': unknown activation type" generate --model "$W/q8.safetensors" --quant-act int4 --prompt-ids 1
head -c 100000 "$W/q8.safetensors" > "$W/trunc.safetensors"
bad "a truncated quantized file" "trunc.safetensors" eval --model "$W/trunc.safetensors" --data "$W/val.bin"
exit $fail
