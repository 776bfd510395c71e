#!/usr/bin/env bash
# Tokenizer throughput: gpt2c (1 thread, all threads) vs tiktoken on the same
# local GPT-2 vocabulary, on tinyshakespeare and on a multilingual text (the
# sentences of bench/multilingual_seed.txt in a shuffled order, ~4 MB, plus
# the Debian license texts). Median of 5 runs each.
#   usage: bench/bench_tokenizer.sh [BUILD_DIR]   (default: build)
# Needs: a built libgpt2c.a, the shared data (or $GPT2C_DATA), python3 + tiktoken.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
B=${1:-$root/build}
eval "$(bash "$root/scripts/find-data.sh" 2>/dev/null)"
[ -f "$VOCAB_DIR/encoder.json" ] || [ -f "$VOCAB_DIR/vocab.json" ] || { echo "no vocabulary" >&2; exit 1; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
pkgs="$(pkg-config --cflags --libs jansson libutf8proc 2>/dev/null || echo -ljansson -lutf8proc)"
cc -O2 -std=c11 -D_GNU_SOURCE -fopenmp -I"$root/include" "$here/bench_tokenizer.c" "$B/libgpt2c.a" $pkgs -lm -o "$W/bench"
python3 - "$here/multilingual_seed.txt" "$W/multi.txt" <<'PY'
import random, sys, glob
seed = open(sys.argv[1], encoding="utf-8").read().splitlines()
rnd = random.Random(1)
parts, size = [], 0
while size < 4_000_000:
    s = rnd.choice(seed) + rnd.choice(["\n", " ", "\n\n"])
    parts.append(s); size += len(s.encode())
for f in sorted(glob.glob("/usr/share/common-licenses/*")):
    try: parts.append(open(f, encoding="utf-8").read())
    except Exception: pass
open(sys.argv[2], "w", encoding="utf-8").write("".join(parts))
PY
printf '%-16s %-9s %8s %8s %12s\n' corpus encoder threads MB/s tokens
for f in "$TEXT" "$W/multi.txt"; do
    name=$(basename "$f" .txt)
    [ "$name" = input ] && name=tinyshakespeare
    { "$W/bench" "$VOCAB_DIR" "$f" 5; python3 "$here/tiktoken_bench.py" "$VOCAB_DIR" "$f" 5; } |
        while IFS=$'\t' read -r enc th mbs toks; do
            printf '%-16s %-9s %8s %8s %12s\n' "$name" "$enc" "$th" "$mbs" "$toks"
        done
done
