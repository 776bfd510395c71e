#!/usr/bin/env bash
# Crafted files and options against the gpt2c command (issue 20): each is
# refused with one line naming the file or option, a non-zero exit, no crash.
set -u
G=$1
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fails=0
pass() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
# expect_error NAME PATTERN CMD...: non-zero exit (not a signal), one stderr line matching PATTERN
# (expect_late_error: the error is the LAST line, after progress output)
expect_error() { LATE=0 check_error "$@"; }
expect_late_error() { LATE=1 check_error "$@"; }
check_error() {
  local name=$1 pat=$2; shift 2
  "$@" >"$W/out" 2>"$W/err"; local rc=$?
  if [ "$LATE" = 1 ]; then tail -n 1 "$W/err" >"$W/err1"; mv "$W/err1" "$W/err"; fi
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then fail "$name: exit $rc"; cat "$W/err"; return; fi
  if [ "$(wc -l <"$W/err")" -ne 1 ] || ! grep -q -- "$pat" "$W/err"; then fail "$name: message"; cat "$W/err"; return; fi
  pass "$name: $(cat "$W/err")"
}
have_jansson=1
case "$("$G" --version)" in *-jansson*) have_jansson=0 ;; esac

# a safetensors file with an empty header
printf '\002\000\000\000\000\000\000\000{}' >"$W/empty.safetensors"
[ $have_jansson = 1 ] && expect_error "info: empty safetensors header" "empty.safetensors: .*no tensors" $G info "$W/empty.safetensors"

# generate: sizes that used to overflow int arithmetic
TINY="$GPT2C_FIXTURES/ref_tiny/model_v3.bin"
expect_error "generate --max-tokens 2^31-1 --batch 2" "--max-tokens: .*exceeds the context" $G generate --model "$TINY" --prompt-ids 1,2 --max-tokens 2147483647 --batch 2
expect_error "generate --max-tokens beyond int" "--max-tokens" $G generate --model gpt2 --prompt-ids 1 --max-tokens 2147483648

# an integer list option whose values do not fit an int
expect_error "integer list beyond int" "--threads: expected comma-separated integers" $G bench train --threads 1,4294967297

# non-finite weights: refused at load naming the tensor, unless --allow-nonfinite;
# a training run whose loss turns non-finite stops and keeps the last checkpoint
le32() { local v=$1; printf '\\x%02x\\x%02x\\x%02x\\x%02x' $((v & 255)) $((v >> 8 & 255)) $((v >> 16 & 255)) $((v >> 24 & 255)); }
{ printf "$(le32 20240520)$(le32 1)$(le32 400)"; head -c $((253 * 4)) /dev/zero
  for i in $(seq 0 399); do printf "$(printf '\\x%02x\\x00' $((i % 100)))"; done; } >"$W/d.bin"
cp "$TINY" "$W/nan.bin"
printf '\x00\x00\xc0\x7f' | dd of="$W/nan.bin" bs=1 seek=1024 conv=notrunc 2>/dev/null   # wte[0][0] = NaN
cp "$TINY" "$W/inf.bin"
size=$(wc -c <"$W/inf.bin")
printf '\x00\x00\x80\x7f' | dd of="$W/inf.bin" bs=1 seek=$((size - 4)) conv=notrunc 2>/dev/null # ln_f.bias[-1] = +Inf
expect_error "NaN weight refused at load" "nan.bin: tensor 'wte.weight' holds a non-finite value" $G eval --model "$W/nan.bin" --data "$W/d.bin" --batch 1 --seq 8
expect_error "Inf weight refused at load" "inf.bin: tensor 'ln_f.bias' holds a non-finite value" $G generate --model "$W/inf.bin" --prompt-ids 1 --max-tokens 1
if $G eval --model "$W/nan.bin" --data "$W/d.bin" --batch 1 --seq 8 --allow-nonfinite >"$W/out" 2>&1; then
  pass "--allow-nonfinite loads it: $(head -1 "$W/out")"
else
  fail "--allow-nonfinite"; cat "$W/out"
fi
cp "$TINY" "$W/kept.bin"
expect_late_error "non-finite loss stops training" "step 0: the loss is nan" $G train --model "$W/nan.bin" --allow-nonfinite --data "$W/d.bin" --batch 1 --seq 8 --steps 3 --save "$W/kept.bin"
cmp -s "$W/kept.bin" "$TINY" && pass "the last checkpoint is kept" || fail "checkpoint overwritten after a non-finite loss"

echo "cli_harden_files: $fails failed"
[ $fails -eq 0 ]
