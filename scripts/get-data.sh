#!/usr/bin/env bash
# Downloads tinyshakespeare and the GPT-2 vocabulary into $GPT2C_DATA (default
# ./data), in the layout of the shared data directory:
#   $GPT2C_DATA/tinyshakespeare/input.txt
#   $GPT2C_DATA/gpt2-tokenizer/{encoder.json,vocab.bpe}
# Checks md5 sums; files already present and correct are kept. Exits non-zero
# with one line on stderr when the network is unreachable or a sum is wrong.
set -u
DATA=${GPT2C_DATA:-./data}
CT=${GPT2C_CONNECT_TIMEOUT:-5}

md5_of() { md5sum "$1" 2>/dev/null | cut -d' ' -f1; }

fetch() { # url dest md5
    local url=$1 dest=$2 sum=$3
    [ "$(md5_of "$dest")" = "$sum" ] && return 0
    mkdir -p "$(dirname "$dest")" || { echo "get-data: cannot create $(dirname "$dest")" >&2; return 1; }
    local tmp="$dest.part.$$"
    if ! curl -fsSL --connect-timeout "$CT" --max-time 300 -o "$tmp" "$url" 2>/dev/null; then
        rm -f "$tmp"
        echo "get-data: cannot download $url (no network?)" >&2
        return 1
    fi
    local got
    got=$(md5_of "$tmp")
    if [ "$got" != "$sum" ]; then
        rm -f "$tmp"
        echo "get-data: $url: md5 $got, expected $sum" >&2
        return 1
    fi
    mv -f "$tmp" "$dest"
}

fetch https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt \
    "$DATA/tinyshakespeare/input.txt" 6fb458f1232090904fb40fe944165e91 || exit 1
fetch https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/encoder.json \
    "$DATA/gpt2-tokenizer/encoder.json" dffec25a898b1f5e569bec4dffd7e5c0 || exit 1
fetch https://openaipublic.blob.core.windows.net/gpt-2/encodings/main/vocab.bpe \
    "$DATA/gpt2-tokenizer/vocab.bpe" 75a37753dd7a28a2c5df80c28bf06e4e || exit 1
echo "get-data: ok: $DATA"
