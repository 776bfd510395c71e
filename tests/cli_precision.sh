#!/usr/bin/env bash
# --precision fp32|bf16 on train / eval / generate / bench / profile / serve:
# bf16 runs end to end on a tiny model (training lowers the loss, bf16 loss
# and text close to fp32's, the default is fp32 bit for bit), and the
# one-line errors of bad input: a value outside the list, bf16 on a backend
# without bf16 GEMMs (blas, ref), bf16 on a quantized model.
set -u
G="$1"
. "$(dirname "$0")/lib/cli.sh"
TINY=(--model gpt2 --layers 2 --heads 2 --embd 128 --ctx 64 --vocab 300)
token_shard "$W/data.bin" 1024 300 37 7

# bad input: values outside the list, bf16 where no bf16 GEMM exists
declare -A ARGS=([train]="${TINY[*]} --data $W/data.bin" [eval]="${TINY[*]} --data $W/data.bin"
                  [generate]="--model gpt2 --prompt-ids 1" [profile]="${TINY[*]}")
for cmd in train eval generate profile; do
    bad "$cmd --precision fp16" "--precision 'fp16': unknown precision (fp32 or bf16)" $cmd ${ARGS[$cmd]} --precision fp16
done
bad "bench train --precision bf8" "--precision 'bf8'" bench train --precision bf8
bad "bench forward --precision ''" "--precision '': unknown precision" bench forward --precision ""
bad "bench generate --precision int8" "--precision 'int8'" bench generate --precision int8
bad "serve --precision f16" "--precision 'f16'" serve --precision f16 --model gpt2
if "$G" --version | grep -q -- "+blas"; then
    for cmd in train eval generate profile; do
        bad "$cmd --precision bf16 --backend blas" "--precision bf16: .*the blas backend has none" \
            $cmd ${ARGS[$cmd]} --precision bf16 --backend blas
    done
    bad "bench train --backend cpu,blas --precision bf16" "--precision bf16: .*blas" bench train --backend cpu,blas --precision bf16
    bad "bench generate --backend blas --precision bf16" "--precision bf16: .*blas" bench generate --backend blas --precision bf16
else
    echo "skip: the blas cases (built without BLAS)"
fi
bad "train --precision bf16 --backend ref" "--precision bf16: .*the ref backend has none" \
    train "${TINY[@]}" --precision bf16 --backend ref --data "$W/data.bin"

# the runs below save and load checkpoints (safetensors: jansson)
if ! "$G" --version | grep -q -- "+jansson"; then echo "skip: the training / checkpoint cases (built without jansson)"; exit $fail; fi

# the default is fp32, bit for bit: --precision fp32 prints the same losses
args=(train "${TINY[@]}" --data "$W/data.bin" --steps 6 --batch 2 --seq 32 --eval-every 0 --lr 1e-3)
"$G" "${args[@]}" --log "$W/default.jsonl" >/dev/null 2>&1
"$G" "${args[@]}" --log "$W/fp32.jsonl" --precision fp32 >/dev/null 2>&1
check "--precision fp32 = the default, bit for bit" 'cmp -s "$W/default.jsonl" "$W/fp32.jsonl" || diff <(grep -o "\"loss\":[^,]*" "$W/default.jsonl") <(grep -o "\"loss\":[^,]*" "$W/fp32.jsonl") >/dev/null'
"$G" "${args[@]}" --log "$W/bf16.jsonl" --precision bf16 --save "$W/bf16.safetensors" 2>"$W/train.err" >/dev/null
check "train --precision bf16 says so" 'grep -q "bf16 precision" "$W/train.err"'
losses() { grep -o '"loss":[0-9.eE+-]*' "$1" | cut -d: -f2 | tr '\n' ' '; }
lf=$(losses "$W/fp32.jsonl"); lb=$(losses "$W/bf16.jsonl")
echo "  fp32 losses: $lf"; echo "  bf16 losses: $lb"
check "bf16 training lowers the loss and stays within 2% of fp32's (6 steps)" \
    'python3 -c "import sys; f=[float(x) for x in \"$lf\".split()]; b=[float(x) for x in \"$lb\".split()]; sys.exit(not (len(f)==len(b)==6 and b[-1]<b[0] and all(abs(x-y)<=0.02*y for x,y in zip(b,f)) and b!=f))" 2>/dev/null || awk -v f="$lf" -v b="$lb" "BEGIN{n=split(f,F);m=split(b,B);ok=(n==6&&m==6&&B[6]<B[1]);d=0;for(i=1;i<=n;i++){e=B[i]-F[i];if(e<0)e=-e;if(e>0.02*F[i])ok=0;if(e>0)d=1};exit !(ok&&d)}"'
check "a bf16 run saves fp32 master weights" '[ -s "$W/bf16.safetensors" ]'

# eval / generate / bench on the checkpoint
e32=$("$G" eval --model "$W/bf16.safetensors" --data "$W/data.bin" --batch 2 --seq 32 | cut -d' ' -f2)
e16=$("$G" eval --model "$W/bf16.safetensors" --data "$W/data.bin" --batch 2 --seq 32 --precision bf16)
echo "  eval fp32 $e32, bf16: $e16"
check "eval --precision bf16 says so and is within 1% of fp32" \
    'printf "%s" "$e16" | grep -q "bf16 precision" && awk -v a="$e32" -v b="$(printf "%s" "$e16" | cut -d" " -f2)" "BEGIN{d=a-b;if(d<0)d=-d;exit !(d<=0.01*a && a!=b)}"'
g16=$("$G" generate --model "$W/bf16.safetensors" --prompt-ids 11,12,13 --max-tokens 8 --temperature 0 --precision bf16)
check "generate --precision bf16 writes 8 tokens" '[ -n "$g16" ]'
check "bench generate --precision bf16: bf16 weights, half the bytes" \
    '"$G" bench generate --model "$W/bf16.safetensors" --prompt-len 16 --tokens 4 --runs 1 --precision bf16 --json | grep -q "\"format\":\"bf16\""'
# one warm-up step: its update makes the data-gradient GEMMs' weight panels
# (a bf16_copy pass, once); from then on adamw writes both copies itself
prof16=$("$G" profile "${TINY[@]}" --batch 2 --seq 16 --trials 1 --warmup 1 --no-counters --no-peak --precision bf16 2>&1)
check "profile --precision bf16 profiles bf16, the weight copies refreshed inside adamw (no bf16_copy pass)" \
    'grep -q "bf16 precision" <<<"$prof16" && grep -q "^adamw" <<<"$prof16" && ! grep -q bf16_copy <<<"$prof16"'
exit $fail
