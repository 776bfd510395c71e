#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz and runs
# each fuzz/fuzz_*.c target for SECONDS (default 20).  Exits non-zero if a
# target finds a crash (the input is saved as build-fuzz/artifacts/<target>-*).
# Usage: fuzz/run.sh [SECONDS]
set -euo pipefail
SECS="${1:-20}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
B="$ROOT/build-fuzz"
CC_BIN="${CC:-clang}"
case "$("$CC_BIN" --version 2>/dev/null | head -1)" in
*clang*) ;;
*) echo "fuzz/run.sh: needs clang (set CC=clang-14 or install clang + libclang-rt-dev)" >&2; exit 2 ;;
esac
mkdir -p "$B"
cmake -S "$ROOT" -B "$B" -DCMAKE_C_COMPILER="$CC_BIN" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DGPT2C_FUZZ=ON -DGPT2C_SANITIZE=ON -DGPT2C_CUDA=OFF -DGPT2C_BLAS=OFF -DBUILD_TESTING=OFF > "$B/build.log" 2>&1 ||
    { cat "$B/build.log" >&2; exit 1; }
targets=()
for src in "$ROOT"/fuzz/fuzz_*.c; do targets+=("$(basename "$src" .c)"); done
cmake --build "$B" -j2 --target "${targets[@]}" >> "$B/build.log" 2>&1 || { tail -40 "$B/build.log" >&2; exit 1; }
mkdir -p "$B/artifacts"
status=0
for t in "${targets[@]}"; do
    kind="${t#fuzz_}"
    work="$B/corpus/$kind" # new inputs go here; the checked-in seeds stay untouched
    mkdir -p "$work"
    seeds=()
    [ -d "$ROOT/fuzz/corpus/$kind" ] && seeds+=("$ROOT/fuzz/corpus/$kind")
    if [ "$t" = fuzz_tokenizer ]; then
        # the tokenizer target needs GPT-2's vocabulary: shared data, else skip
        vocab="${GPT2C_VOCAB:-${GPT2C_DATA:-$ROOT/../shared/data}/gpt2-tokenizer}"
        if [ ! -f "$vocab/encoder.json" ]; then
            echo "== $t: skipped (no GPT-2 vocabulary at $vocab)"
            continue
        fi
        export GPT2C_VOCAB="$vocab"
    fi
    echo "== $t: ${SECS}s"
    if ! "$B/fuzz/$t" -max_total_time="$SECS" -print_final_stats=1 -artifact_prefix="$B/artifacts/$t-" \
        "$work" "${seeds[@]}" > "$B/$t.log" 2>&1; then
        echo "FAIL: $t found a crash:" >&2
        grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$B/$t.log" >&2 || tail -30 "$B/$t.log" >&2
        status=1
    else
        grep -E "stat::number_of_executed_units|stat::new_units_added" "$B/$t.log" | tr '\n' ' '
        echo
    fi
done
exit $status
