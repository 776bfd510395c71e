#!/usr/bin/env bash
# The fp32 GEMM's loss split into the micro-kernel's and the memory
# hierarchy's, per GPT-2 shape, one thread (bench/gemm_hierarchy.c): each
# ratio taken between neighbours in time, so a shared machine's slow phases
# cancel.  Usage: bench/gemm_hierarchy.sh [N rows (1024)] [rounds (9)] [trace]   (needs build/libgpt2c.a)
# ("trace": FMA bursts and the in-L2 reference GEMM alternated, rounds times, one line each)
set -eu
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/.."
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
. "$here/lib/driver.sh"
bench_driver "$W/gh" "$here/gemm_hierarchy.c" "$root" "$root/build"
lscpu | grep -E "Vendor ID|CPU family|^Model:|Stepping|Model name" | tr -s ' '
echo "N=${1:-1024}, 1 thread, ${2:-9} rounds (the blocking: this CPU's cached autotune, as bench gemm)"
GPT2C_GEMM_AUTOTUNE=${GPT2C_GEMM_AUTOTUNE:-1} "$W/gh" "${1:-1024}" "${2:-9}" ${3:-}
