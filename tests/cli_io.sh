#!/usr/bin/env bash
# gpt2c info / convert: round trips through the CLI, and bad inputs that must
# exit non-zero with one line on stderr naming the file (never crash).
# Usage: cli_io.sh <path-to-gpt2c>
set -u
G="$1"
T=$(mktemp -d "${TMPDIR:-/tmp}/gpt2c_cli_io_XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

le32() { # little-endian int32
    local v=$1
    printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $(((v >> 8) & 255)))\\x$(printf %02x $(((v >> 16) & 255)))\\x$(printf %02x $(((v >> 24) & 255)))"
}

# A tiny llm.c v3 checkpoint: maxT 8, V 10, L 1, NH 2, C 8, Vp 128.
# wte rows V..Vp-1 are zero, as llm.c writes them (safetensors drops them).
# Floats: Vp*C + maxT*C + L*(12*C*C + 13*C) + 2*C = 1976, each ~0.1..0.2 with varying mantissa.
make_bin() {
    {
        for v in 20240326 3 8 10 1 2 8 128; do le32 $v; done
        head -c $((248 * 4)) /dev/zero
        for ((i = 0; i < 1976; i++)); do
            if [ $i -ge 80 ] && [ $i -lt 1024 ]; then printf '\0\0\0\0'; continue; fi # wte pad rows are zero
            printf "\\x$(printf %02x $((i * 7 & 255)))\\x$(printf %02x $((i * 13 & 255)))\\x$(printf %02x $((32 + i % 64)))\\x3e"
        done
    } > "$1"
}

# expect_fail EXPECTED_NAME cmd...: non-zero exit (< 128: no crash), stderr one line naming EXPECTED_NAME
expect_fail() {
    local want="$1"
    shift
    "$@" > "$T/out" 2> "$T/err"
    local rc=$?
    if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then fail "$* exited $rc"; return; fi
    if [ "$(wc -l < "$T/err")" -ne 1 ]; then fail "$*: stderr is not one line: $(cat "$T/err")"; return; fi
    grep -qF -- "$want" "$T/err" || fail "$*: stderr does not name '$want': $(cat "$T/err")"
    echo "  ok (exit $rc): $(cat "$T/err")"
}

expect_ok() {
    "$@" > "$T/out" 2> "$T/err" || { fail "$* failed: $(cat "$T/err")"; return 1; }
}

make_bin "$T/m.bin"

# without jansson: the llm.c .bin half only, and safetensors is refused in one line
if "$G" --version | grep -q -- "-jansson"; then
    expect_ok "$G" info "$T/m.bin" && { grep -q "layers 1, heads 2" "$T/out" || fail "info .bin: no config line"; }
    expect_ok "$G" convert "$T/m.bin" "$T/m5.bin" --bf16
    expect_ok "$G" info "$T/m5.bin" && { grep -q "version 5 (bf16)" "$T/out" || fail "info v5"; }
    expect_fail "jansson" "$G" convert "$T/m.bin" "$T/x.safetensors"
    head -c 3000 "$T/m.bin" > "$T/trunc.bin"
    expect_fail "$T/trunc.bin" "$G" info "$T/trunc.bin"
    expect_fail "$T/nothere.bin" "$G" info "$T/nothere.bin"
    [ -e "$T/x.safetensors" ] && fail "a failed convert left an output file"
    if [ $fails -ne 0 ]; then echo "cli_io: $fails failures"; exit 1; fi
    echo "SKIP: built without jansson (the .bin checks passed; safetensors ones skipped)"; exit 77
fi

expect_ok "$G" info "$T/m.bin" && {
    grep -q "llm.c model checkpoint, version 3" "$T/out" || fail "info .bin: no format line"
    grep -q "layers 1, heads 2" "$T/out" || fail "info .bin: no config line"
}
expect_ok "$G" convert "$T/m.bin" "$T/m.safetensors"
expect_ok "$G" info "$T/m.safetensors" && {
    grep -q "transformer.h.0.attn.c_attn.weight  *F32  *\[8, 24\]" "$T/out" || fail "info .safetensors: tensor list"
    grep -q "heads 2 (from metadata)" "$T/out" || fail "info .safetensors: heads source"
    grep -q "n_head = 2" "$T/out" || fail "info .safetensors: metadata"
}
expect_ok "$G" convert "$T/m.safetensors" "$T/back.bin"
cmp -s "$T/m.bin" "$T/back.bin" || fail "bin -> safetensors -> bin is not byte-identical"
expect_ok "$G" convert "$T/m.bin" "$T/m5.bin" --bf16
expect_ok "$G" info "$T/m5.bin" && { grep -q "version 5 (bf16)" "$T/out" || fail "info v5"; }
expect_ok "$G" convert "$T/m5.bin" "$T/m5.safetensors"
expect_ok "$G" convert "$T/m5.safetensors" "$T/m5b.bin" --bf16
cmp -s "$T/m5.bin" "$T/m5b.bin" || fail "bf16 bin -> safetensors -> bf16 bin is not byte-identical"

# bad inputs
head -c 3000 "$T/m.bin" > "$T/trunc.bin"
expect_fail "$T/trunc.bin" "$G" info "$T/trunc.bin"
expect_fail "$T/trunc.bin" "$G" convert "$T/trunc.bin" "$T/x.safetensors"
head -c 2000 "$T/m.safetensors" > "$T/trunc.safetensors"
expect_fail "$T/trunc.safetensors" "$G" info "$T/trunc.safetensors"
expect_fail "$T/trunc.safetensors" "$G" convert "$T/trunc.safetensors" "$T/x.bin"
{ le32 12345; head -c 8000 "$T/m.bin" | tail -c +5; } > "$T/magic.bin"
expect_fail "magic" "$G" info "$T/magic.bin"
{ le32 20240326; le32 9; head -c 8000 "$T/m.bin" | tail -c +9; } > "$T/version.bin"
expect_fail "version 9" "$G" convert "$T/version.bin" "$T/x.safetensors"
{ printf '\x0f\0\0\0\0\0\0\0{"a": not json}'; } > "$T/notjson.safetensors"
expect_fail "$T/notjson.safetensors" "$G" info "$T/notjson.safetensors"
printf '\0\0\0\0\0\0\1\0{}' > "$T/huge.safetensors"
expect_fail "absurd" "$G" convert "$T/huge.safetensors" "$T/x.bin"
expect_fail "$T/nothere.bin" "$G" info "$T/nothere.bin"
expect_fail "/nonexistent-gpt2c-dir/x.bin" "$G" convert "$T/m.bin" /nonexistent-gpt2c-dir/x.bin
expect_fail "output format" "$G" convert "$T/m.bin" "$T/x.txt"
expect_fail "--bf16" "$G" convert "$T/m.bin" "$T/x.safetensors" --bf16
expect_fail "expected" "$G" info
[ -e "$T/x.bin" ] || [ -e "$T/x.safetensors" ] && fail "a failed convert left an output file"

# the reference fixtures, when merged
F="${GPT2C_FIXTURES:-}/ref_tiny"
if [ -f "$F/model_v3.bin" ]; then
    expect_ok "$G" info "$F/model.safetensors" && { grep -q "from config.json" "$T/out" || grep -q "from metadata" "$T/out" || fail "fixture info: heads source"; }
    expect_ok "$G" convert "$F/model_v3.bin" "$T/f.safetensors"
    expect_ok "$G" convert "$T/f.safetensors" "$T/f.bin"
    cmp -s "$F/model_v3.bin" "$T/f.bin" || fail "fixture model_v3.bin -> safetensors -> bin is not byte-identical"
fi

if [ $fails -ne 0 ]; then echo "cli_io: $fails failures"; exit 1; fi
echo "cli_io: all passed"
