#!/usr/bin/env bash
# The optimizer's ops against loops that move the same bytes with next to no
# arithmetic (bench/optimizer_ceiling.c): op/twin near 1 means the op runs at
# what its memory traffic allows.
#   bench/optimizer_ceiling.sh [L matrices, default 12] [rounds, default 7] [rows, default 768] [cols, default 3072]
# needs build/libgpt2c.a (an AVX-512 CPU); prints the CPU first.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/.."
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
grep -qw avx512bw /proc/cpuinfo || { echo "optimizer_ceiling: needs AVX-512 (F and BW): skipped"; exit 0; }
. "$here/lib/driver.sh"
bench_driver "$W/oc" "$here/optimizer_ceiling.c" "$root" "$root/build" -O3 -march=native
lscpu | grep -E "Vendor ID|CPU family|^Model:|Stepping|Model name" | tr -s ' '
"$W/oc" "${1:-12}" "${2:-7}" "${3:-768}" "${4:-3072}"
