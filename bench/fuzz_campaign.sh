#!/usr/bin/env bash
# The long fuzzing campaign of issue 20: every fuzz/fuzz_*.c target for SECONDS
# (default 300) one after the other at the lowest priority, after fuzz/run.sh
# has built them.  Prints per target: seconds, executions, exec/s, corpus
# growth and findings (crash inputs go to build-fuzz/artifacts/campaign-<target>-*).
# Usage: bash fuzz/run.sh 1 && bench/fuzz_campaign.sh [SECONDS] [TARGET...]
set -u
SECS=${1:-300}; shift || true
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
B="$ROOT/build-fuzz"
targets=("$@")
[ ${#targets[@]} -gt 0 ] || for s in "$ROOT"/fuzz/fuzz_*.c; do targets+=("$(basename "$s" .c)"); done
mkdir -p "$B/artifacts"
lscpu | grep -E "^(Vendor ID|CPU family|Model|Model name):" | tr -s ' ' | paste -sd';'
printf "%-22s %6s %12s %8s %8s %s\n" target secs execs exec/s new findings
for t in "${targets[@]}"; do
  kind=${t#fuzz_}
  work="$B/corpus/$kind"; mkdir -p "$work"
  seeds=(); [ -d "$ROOT/fuzz/corpus/$kind" ] && seeds+=("$ROOT/fuzz/corpus/$kind")
  if [ "$t" = fuzz_tokenizer ]; then
    export GPT2C_VOCAB="${GPT2C_VOCAB:-$ROOT/../shared/data/gpt2-tokenizer}"
    [ -f "$GPT2C_VOCAB/encoder.json" ] || { echo "$t: skipped (no GPT-2 vocabulary)"; continue; }
  fi
  log="$B/campaign-$t.log"
  start=$(date +%s)
  nice -n 19 "$B/fuzz/$t" -max_total_time="$SECS" -print_final_stats=1 -close_fd_mask=3 \
    -artifact_prefix="$B/artifacts/campaign-$t-" "$work" "${seeds[@]}" >"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o "stat::number_of_executed_units: *[0-9]*" "$log" | grep -o "[0-9]*$")
  new=$(grep -o "stat::new_units_added: *[0-9]*" "$log" | grep -o "[0-9]*$")
  found="none"
  [ $rc -ne 0 ] && found="CRASH: $(grep -m1 -E "ERROR|runtime error" "$log" | cut -c1-120)"
  printf "%-22s %6s %12s %8s %8s %s\n" "$t" "$secs" "${execs:-?}" "$(( ${execs:-0} / (secs > 0 ? secs : 1) ))" "${new:-?}" "$found"
done
