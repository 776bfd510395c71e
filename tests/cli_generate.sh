#!/usr/bin/env bash
# gpt2c generate / bench generate: greedy is deterministic, seeded sampling is
# reproducible, --json has the contract's keys, bad input gets a one-line error.
set -u
G="$1"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
# one-line error on stderr and exit status 1 or 2
bad() {
    local name="$1"; shift
    local err; err=$("$G" generate "$@" 2>&1 >/dev/null); local rc=$?
    if [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [ -n "$err" ]; then
        echo "ok: $name -> $err"
    else
        echo "FAIL: $name (rc=$rc): $err"; fail=1
    fi
}
# the tiny reference model when the fixtures are there (fast), else a random gpt2
TINY="${GPT2C_FIXTURES:-}/ref_tiny/model.safetensors"
# (safetensors: needs jansson)
if [ -f "$TINY" ] && "$G" --version | grep -q -- "+jansson"; then MODEL="$TINY"; else MODEL=gpt2; fi
M="--model $MODEL --threads 2"

a=$("$G" generate $M --prompt-ids 11,12,13 --max-tokens 6 --temperature 0) || fail=1
b=$("$G" generate $M --prompt-ids 11,12,13 --max-tokens 6 --temperature 0) || fail=1
check "greedy is deterministic" '[ -n "$a" ] && [ "$a" = "$b" ]'
c=$("$G" generate $M --prompt-ids 11,12 --max-tokens 6 --seed 7 --top-k 50 --top-p 0.9 --batch 2 --vocab /nonexistent-dir 2>/dev/null)
check "a vocab that does not exist is an error" '[ -z "$c" ]'
c=$("$G" generate $M --prompt-ids 11,12 --max-tokens 6 --seed 7 --top-k 50 --top-p 0.9 --batch 2) || fail=1
d=$("$G" generate $M --prompt-ids 11,12 --max-tokens 6 --seed 7 --top-k 50 --top-p 0.9 --batch 2) || fail=1
check "seeded sampling is reproducible" '[ -n "$c" ] && [ "$c" = "$d" ]'
check "two samples printed" '[ "$(printf "%s\n" "$c" | grep -c "^--- sample")" -eq 2 ]'

bad "negative temperature" $M --prompt-ids 1,2 --temperature -0.5
bad "top-p 0" $M --prompt-ids 1,2 --top-p 0
bad "top-p above 1" $M --prompt-ids 1,2 --top-p 1.01
bad "negative top-k" $M --prompt-ids 1,2 --top-k -1
bad "max-tokens beyond the context" $M --prompt-ids 1,2 --max-tokens 100000
bad "id out of range" $M --prompt-ids 1,50257 --max-tokens 2
bad "prompt longer than the context" $M --prompt-ids "$(seq -s, 1 1025)" --max-tokens 1
bad "no model" --prompt-ids 1,2
bad "bad ids" $M --prompt-ids 1,x

j=$("$G" bench generate --model "$MODEL" --prompt-len 8 --tokens 4 --runs 1 --threads 2 --hugepages --json) || fail=1
check "bench --json has prefill_tok_s and decode_tok_s" 'printf "%s" "$j" | grep -q "\"prefill_tok_s\":[0-9]" && printf "%s" "$j" | grep -q "\"decode_tok_s\":[0-9]"'
exit $fail
