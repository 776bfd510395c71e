#!/usr/bin/env bash
# gpt2c tokenize streams its input (parts of 16 MB, shards written as they
# fill): cutting the text into parts must not change a byte of the shards.
# GPT2C_TOKENIZE_PART_BYTES (a test knob) makes the parts tiny, so that every
# kind of cut happens: after "\n\n", inside a section with no blank line, in
# multi-byte UTF-8 and Unicode spaces, at the end of a file, in an empty file.
# Each run is compared with the default run, where every file here is one part
# (the whole-text encoding gpt2c did before streaming); on tinyshakespeare too
# when the shared data is present (GPT-2's vocabulary).
# Usage: cli_tokenize_stream.sh <path-to-gpt2c>
set -u
G=$1
case "$("$G" --version)" in
  *-jansson*) echo "SKIP: built without jansson"; exit 77 ;;
  *-utf8proc*) echo "SKIP: built without utf8proc"; exit 77 ;;
esac
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fails=0
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

# a corpus with every kind of boundary
words=(alpha beta "δέλτα" "日本語" "  spaced" $'tab\there' "x's" "don't" 123 4.5 " " $'\u3000wide' $'nbsp\u00a0x')
ends=($'\n' $'\n' $'\n\n' $'\n\n\n' $' \n' $'\n \n' $'\r\n')
{
  for ((i = 0; i < 3000; i++)); do
    n=$((i * 7 % 9))
    for ((j = 0; j < n; j++)); do printf '%s ' "${words[$(((i * 13 + j * 5) % ${#words[@]}))]}"; done
    printf '%s' "${ends[$((i * 3 % ${#ends[@]}))]}"
  done
} >"$W/mixed.txt"
for ((i = 0; i < 3000; i++)); do echo "line $i of one long section, no blank line"; done >"$W/nosep.txt"
: >"$W/empty.txt"
printf 'one\n\ntwo\n\n' >"$W/endsep.txt"
IN=("$W/mixed.txt" "$W/nosep.txt" "$W/empty.txt" "$W/endsep.txt")
$G bpe-train --in "${IN[@]}" --vocab-size 400 --out "$W/vocab" >/dev/null 2>&1 || { echo "bpe-train failed"; exit 1; }

# run NAME PART ARGS...: tokenize into $W/NAME with parts of PART bytes (0: default)
run() {
  local name=$1 part=$2; shift 2
  if [ "$part" = 0 ]; then
    "$G" tokenize --threads 1 --out "$W/$name" --name t "$@" >"$W/$name.log" 2>&1
  else
    GPT2C_TOKENIZE_PART_BYTES=$part "$G" tokenize --threads 1 --out "$W/$name" --name t "$@" >"$W/$name.log" 2>&1
  fi || { fail "$name: tokenize failed: $(tail -1 "$W/$name.log")"; return 1; }
}
same() {
  if diff -r "$W/$1" "$W/$2" >/dev/null; then echo "ok: $2 = $1 ($(ls "$W/$2" | wc -l) shards)"; else fail "$2 differs from $1"; fi
}

for split in "--val-tokens 500" "--val-frac 0.2"; do
  tag=$(echo "$split" | tr -dc 'a-z0-9')
  run "$tag-whole" 0 --vocab "$W/vocab" --in "${IN[@]}" $split --shard-tokens 7000 || continue
  for part in 16 61 1000; do
    run "$tag-$part" $part --vocab "$W/vocab" --in "${IN[@]}" $split --shard-tokens 7000 && same "$tag-whole" "$tag-$part"
  done
done
ls -a "$W"/valfrac*-16 | grep -q tokens.tmp && fail "--val-frac left its spool file behind"

TS=${GPT2C_SHARED_DATA_DEFAULT:-}/tinyshakespeare/input.txt
VOC=${GPT2C_SHARED_DATA_DEFAULT:-}/gpt2-tokenizer
if [ -f "$TS" ] && [ -f "$VOC/encoder.json" ]; then
  run ts-whole 0 --vocab "$VOC" --in "$TS" --shard-tokens 100000 &&
    run ts-parts 4096 --vocab "$VOC" --in "$TS" --shard-tokens 100000 && same ts-whole ts-parts
else
  echo "note: tinyshakespeare / GPT-2 vocabulary not present: that comparison skipped"
fi

if [ $fails -ne 0 ]; then echo "cli_tokenize_stream: $fails failures"; exit 1; fi
echo "cli_tokenize_stream: all passed"
