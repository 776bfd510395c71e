#!/usr/bin/env bash
# One --help style for every command: "  --name METAVAR  text (default X)", the
# default always written "(default X)" at the end of the line (never "[X]" or
# "default: X"), and --version listing the build's features.
# Usage: cli_help_style.sh <path-to-gpt2c>
set -u
G=$1
fails=0
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
cmds=$("$G" --help | awk '/^commands:/ {on = 1; next} on && NF {print $1}')
[ -n "$cmds" ] || { echo "FAIL: no commands in gpt2c --help"; exit 1; }
subs="bench train|bench forward|bench gemm|bench peak|bench generate|wse run|wse sweep"
checked=0
while IFS= read -r c; do
  # shellcheck disable=SC2086
  out=$("$G" $c --help 2>&1) || { fail "gpt2c $c --help exited non-zero"; continue; }
  echo "$out" | head -1 | grep -q "^usage: gpt2c" || { fail "gpt2c $c --help: no usage line"; continue; }
  echo "$out" | grep -q "^  --" || continue # a dispatcher (bench, wse): its subcommands are checked below
  checked=$((checked + 1))
  bad=$(echo "$out" | grep "^  --" | grep -vE '^  --[a-z0-9-]+( [A-Z][A-Z.,]*)? +[^ ]' )
  [ -z "$bad" ] || fail "gpt2c $c --help: option lines not in the common form: $bad"
  bad=$(echo "$out" | grep "^  --" | grep -E '\][[:space:]]*$|default:|\(default [^)]*\).+' )
  [ -z "$bad" ] || fail "gpt2c $c --help: a default not written '(default X)' at the end: $bad"
done < <(printf '%s\n' $cmds; echo "$subs" | tr '|' '\n')
[ $checked -ge 12 ] || fail "only $checked commands had options to check"
v=$("$G" --version)
for f in "SIMD paths" BLAS CUDA MPI JSON utf8proc HTTP; do
  echo "$v" | grep -q "^  $f " || fail "--version does not list $f"
done
echo "$v" | head -1 | grep -q "^gpt2c [0-9]" || fail "--version: first line is not 'gpt2c VERSION (...)'"
if [ $fails -ne 0 ]; then echo "cli_help_style: $fails failures"; exit 1; fi
echo "cli_help_style: $checked commands, one style"
