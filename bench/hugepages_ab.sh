#!/usr/bin/env bash
# The optimizer's ops (bf16 AdamW with its panels, fp32 AdamW, the grad norm)
# on 4 KiB against 2 MiB pages, in one process (bench/hugepages_ab.c):
#   bench/hugepages_ab.sh [L layers of 768 x 3072, default 12] [rounds, default 7]
# needs build/libgpt2c.a; prints the CPU and THP's mode first.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/.."
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
. "$here/lib/driver.sh"
bench_driver "$W/hp" "$here/hugepages_ab.c" "$root" "$root/build"
lscpu | grep -E "Vendor ID|CPU family|^Model:|Stepping|Model name" | tr -s ' '
echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)"
"$W/hp" "${1:-12}" "${2:-7}"
