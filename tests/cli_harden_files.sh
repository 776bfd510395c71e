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
expect_error() {
  local name=$1 pat=$2; shift 2
  "$@" >"$W/out" 2>"$W/err"; local rc=$?
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

echo "cli_harden_files: $fails failed"
[ $fails -eq 0 ]
