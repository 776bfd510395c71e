#!/usr/bin/env bash
# Peak RSS and speed of `gpt2c tokenize` on a ~1 GB text (tinyshakespeare
# repeated), streaming build vs an older build that held the corpus in memory.
# Usage: bench/tokenize_stream.sh NEW_GPT2C [OLD_GPT2C]   (needs ../shared/data)
# The input is generated in /tmp and deleted afterwards.
set -eu
NEW=$1
OLD=${2:-}
DATA=${GPT2C_DATA:-$(dirname "$0")/../../shared/data}
TS=$DATA/tinyshakespeare/input.txt
IN=/tmp/gpt2c_tokenize_1g.txt
OUT=$(mktemp -d)
trap 'rm -rf "$IN" "$OUT"' EXIT
: >"$IN"
while [ "$(stat -c %s "$IN")" -lt 1000000000 ]; do cat "$TS" "$TS" "$TS" "$TS" "$TS" "$TS" "$TS" "$TS" >>"$IN"; done
echo "input: $(stat -c %s "$IN") bytes; CPU: $(lscpu | sed -n 's/^Model name: *//p') family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p'), $(nproc) cores"
for bin in "$NEW" $OLD; do
  rm -rf "$OUT"/*
  /usr/bin/time -f "%M KiB peak RSS, %e s wall" "$bin" tokenize --vocab "$DATA/gpt2-tokenizer" --in "$IN" --out "$OUT/s" \
    --name ts 2>"$OUT/err" | tail -1
  echo "  $bin: $(tail -1 "$OUT/err")"
  (cd "$OUT/s" && cat ts_*.bin | md5sum | sed 's/^/  shards md5 (all, sorted names): /')
done
