# Shared by the CLI tests (tests/cli_*.sh), sourced after G (the gpt2c binary)
# is set:   . "$(dirname "$0")/lib/cli.sh"
# It makes a scratch directory W (removed on exit) and gives:
#   pass NAME / fail NAME        report one case; fail sets fail=1 and counts fails
#   check NAME EXPR              EXPR (eval'd) must succeed
#   bad NAME WANT ARGS...        `gpt2c ARGS` must exit non-zero with exactly one
#                                line on stderr that contains WANT (a grep pattern)
#   expect_error NAME PAT CMD... CMD must exit non-zero (not by a signal) with one
#                                stderr line matching PAT
#   le32 N                       N as 4 little-endian bytes
#   token_shard FILE N MOD MULT DIV [ADD]
#                                an llm.c token shard (256-int header, uint16 ids) of
#                                N ids, id i = (i*MULT + ADD + i/DIV) % MOD
# A test ends with `exit $fail` (or its own summary of $fails).
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fail=0
fails=0
pass() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fail=1; fails=$((fails + 1)); }
check() { if eval "$2"; then pass "$1"; else fail "$1"; fi; }
bad() {
    local name="$1" want="$2"; shift 2
    local err; err=$("$G" "$@" 2>&1 >/dev/null); local rc=$?
    if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && printf '%s' "$err" | grep -q -- "$want"; then
        echo "ok: $name -> $err"
    else
        fail "$name (rc=$rc): $err"
    fi
}
expect_error() {
    local name=$1 pat=$2; shift 2
    "$@" >"$W/out" 2>"$W/err"; local rc=$?
    if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then fail "$name: exit $rc"; cat "$W/err"; return; fi
    if [ "$(wc -l <"$W/err")" -ne 1 ]; then fail "$name: expected one line on stderr"; cat "$W/err"; return; fi
    if ! grep -q -- "$pat" "$W/err"; then fail "$name: message lacks '$pat'"; cat "$W/err"; return; fi
    pass "$name: $(cat "$W/err")"
}
le32() { printf "\\x$(printf %02x $(($1 & 255)))\\x$(printf %02x $((($1 >> 8) & 255)))\\x$(printf %02x $((($1 >> 16) & 255)))\\x$(printf %02x $((($1 >> 24) & 255)))"; }
token_shard() {
    local file=$1 n=$2 mod=$3 mult=$4 div=$5 add=${6:-0} i v
    { le32 20240520; le32 1; le32 "$n"; head -c $((253 * 4)) /dev/zero
      for ((i = 0; i < n; i++)); do
          v=$(((i * mult + add + i / div) % mod)); printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $((v >> 8)))"
      done; } > "$file"
}
