#!/usr/bin/env bash
# gpt2c encode / decode / tokenize / bpe-train end to end. Needs the shared
# GPT-2 vocabulary for the GPT-2 parts (skips them when absent).
set -u
G=$1
# the tokenizer reads vocab.json (jansson) and classifies with utf8proc
case "$("$G" --version)" in
    *-jansson*) echo "SKIP: built without jansson"; exit 77 ;;
    *-utf8proc*) echo "SKIP: built without utf8proc"; exit 77 ;;
esac
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }

# a vocabulary trained on the spot: no shared data needed
printf 'the cat sat on the mat.\n\nthe dog ate the cat food.\n\nHéllo wörld 123 ünïcode!\n' > "$T/c.txt"
for i in 1 2 3 4 5 6; do cat "$T/c.txt"; done > "$T/corpus.txt"
check "bpe-train" '"$G" bpe-train --in "$T/corpus.txt" --vocab-size 300 --out "$T/v" > /dev/null'
check "trained vocab round trip" '"$G" encode --vocab "$T/v" < "$T/corpus.txt" | "$G" decode --vocab "$T/v" | cmp -s - "$T/corpus.txt"'
head -c 3000 /dev/urandom > "$T/rnd.bin"
check "random bytes round trip" '"$G" encode --vocab "$T/v" < "$T/rnd.bin" | "$G" decode --vocab "$T/v" | cmp -s - "$T/rnd.bin"'
check "tokenize with the trained vocab" '"$G" tokenize --vocab "$T/v" --in "$T/corpus.txt" --out "$T/s" --val-tokens 10 --name tiny > "$T/log" 2>&1 && [ -f "$T/s/tiny_val_000000.bin" ] && [ -f "$T/s/tiny_train_000000.bin" ]'
check "tokenize --val-frac, several shards" '"$G" tokenize --vocab "$T/v" --in "$T/corpus.txt" "$T/c.txt" --out "$T/s2" --val-frac 0.5 --shard-tokens 50 > "$T/log" 2>&1 && [ -f "$T/s2/corpus_train_000001.bin" ]'

D=${GPT2C_DATA:-${GPT2C_SHARED_DATA_DEFAULT:-}}
V="$D/gpt2-tokenizer"
if [ -z "$D" ] || [ ! -f "$V/encoder.json" ]; then
    echo "no shared GPT-2 vocabulary: skipping the GPT-2 parts"
    [ $fail = 0 ] && exit 77 || exit 1
fi
check "encode Hello world" '[ "$(printf "Hello world" | "$G" encode --vocab "$V")" = "15496 995" ]'
check "encode special off" '[ "$(printf "<|endoftext|>" | "$G" encode --vocab "$V" | wc -w)" -gt 1 ]'
check "encode --allow-special" '[ "$(printf "a<|endoftext|>" | "$G" encode --vocab "$V" --allow-special)" = "64 50256" ]'
check "decode" '[ "$(echo "18435 2159 0" | "$G" decode --vocab "$V")" = " Hello World!" ]'
check "GPT-2 random bytes round trip" '"$G" encode --vocab "$V" < "$T/rnd.bin" | "$G" decode --vocab "$V" | cmp -s - "$T/rnd.bin"'
S="$D/tinyshakespeare/input.txt"
if [ -f "$S" ]; then
    check "tinyshakespeare round trip" '"$G" encode --vocab "$V" < "$S" | "$G" decode --vocab "$V" | cmp -s - "$S"'
    check "encode threads 1 == threads 2" '[ "$("$G" encode --vocab "$V" --threads 1 < "$S" | md5sum)" = "$("$G" encode --vocab "$V" --threads 2 < "$S" | md5sum)" ]'
    check "tokenize tinyshakespeare" '"$G" tokenize --vocab "$V" --in "$S" --out "$T/ts" --name tiny_shakespeare > "$T/ts.log" 2> "$T/ts.err"'
    cat "$T/ts.log"
    # header int32 #2 is the token count
    count() { od -An -t d4 -j 8 -N 4 "$1" | tr -d ' '; }
    check "32768 validation tokens" '[ "$(count "$T/ts/tiny_shakespeare_val_000000.bin")" = 32768 ]'
    check "305260 training tokens" '[ "$(count "$T/ts/tiny_shakespeare_train_000000.bin")" = 305260 ]'
    check "progress: a few plain lines when stderr is not a tty" '[ "$(wc -l < "$T/ts.err")" -le 6 ]'
fi
exit $fail
