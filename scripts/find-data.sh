#!/usr/bin/env bash
# Finds a text corpus and a vocabulary to use, and prints (stdout):
#   VOCAB_DIR=<dir with encoder.json+vocab.bpe or vocab.json+merges.txt>
#   TEXT=<text file>
#   SOURCE=<shared|env|download|debian-fallback>
# In order: $GPT2C_DATA; ../shared/data next to the repository; a download by
# scripts/get-data.sh into ./data; else the Debian license texts
# (/usr/share/common-licenses/*) with a 2048-token vocabulary trained on the
# spot by `gpt2c bpe-train` (needs $GPT2C, default build/gpt2c).
# Use:  eval "$(scripts/find-data.sh)"   or   source scripts/find-data.sh
# (sourcing defines gpt2c_find_data and runs it, exporting the three variables).
# Notes go to stderr; exit status 1 when nothing usable was found.

gpt2c_find_data() {
    local here root
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    root=$(dirname "$here")
    local G=${GPT2C:-$root/build/gpt2c}
    local d
    _ok() { [ -f "$1/tinyshakespeare/input.txt" ] && { [ -f "$1/gpt2-tokenizer/encoder.json" ] || [ -f "$1/gpt2-tokenizer/vocab.json" ]; }; }
    _emit() { printf 'VOCAB_DIR=%s\nTEXT=%s\nSOURCE=%s\n' "$1" "$2" "$3"; echo "find-data: using $3 data: $2 with vocabulary $1" >&2; }
    if [ -n "${GPT2C_DATA:-}" ] && _ok "$GPT2C_DATA"; then
        d=$(cd "$GPT2C_DATA" && pwd)
        _emit "$d/gpt2-tokenizer" "$d/tinyshakespeare/input.txt" env
        return 0
    fi
    if _ok "$root/../shared/data"; then
        d=$(cd "$root/../shared/data" && pwd)
        _emit "$d/gpt2-tokenizer" "$d/tinyshakespeare/input.txt" shared
        return 0
    fi
    d=${GPT2C_DATA:-$root/data}
    if GPT2C_DATA="$d" bash "$here/get-data.sh" >/dev/null; then
        d=$(cd "$d" && pwd)
        _emit "$d/gpt2-tokenizer" "$d/tinyshakespeare/input.txt" download
        return 0
    fi
    # offline fallback: Debian's license texts and a vocabulary trained here
    local fb=${GPT2C_FALLBACK_DIR:-$root/data/fallback}
    mkdir -p "$fb" || return 1
    if [ ! -s "$fb/corpus.txt" ]; then
        local f first=1
        : > "$fb/corpus.txt.tmp"
        for f in /usr/share/common-licenses/*; do
            [ -f "$f" ] || continue
            [ $first = 1 ] || printf '\n\n' >> "$fb/corpus.txt.tmp"
            cat "$f" >> "$fb/corpus.txt.tmp"
            first=0
        done
        [ -s "$fb/corpus.txt.tmp" ] || { echo "find-data: no data found and /usr/share/common-licenses is empty" >&2; return 1; }
        mv "$fb/corpus.txt.tmp" "$fb/corpus.txt"
    fi
    if [ ! -f "$fb/vocab/vocab.json" ] || [ ! -f "$fb/vocab/merges.txt" ]; then
        [ -x "$G" ] || { echo "find-data: $G not built: cannot train the fallback vocabulary (set GPT2C)" >&2; return 1; }
        "$G" bpe-train --in "$fb/corpus.txt" --vocab-size 2048 --out "$fb/vocab" >&2 || return 1
    fi
    _emit "$(cd "$fb/vocab" && pwd)" "$(cd "$fb" && pwd)/corpus.txt" debian-fallback
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    gpt2c_find_data
    exit $?
else
    eval "$(gpt2c_find_data)" && export VOCAB_DIR TEXT SOURCE
fi
