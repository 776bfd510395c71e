#!/usr/bin/env bash
# fp32 GEMM, the cpu backend's against OpenBLAS's, one thread, alternated call
# by call (bench/gemm_blas_ab.c): `bench gemm` times each side's runs back to
# back, which a VM whose speed moves over seconds can favour either way.
# OpenBLAS's core is chosen as `bench gemm` does (OPENBLAS_CORETYPE from the
# ISA: SkylakeX with AVX-512F, Haswell with AVX2) unless already set.
# Usage: bench/gemm_blas_ab.sh [N rows (1024)] [rounds (20)]   (needs build/libgpt2c.a, libopenblas)
set -eu
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/.."
W="$(mktemp -d)"; trap 'rm -rf "$W"' EXIT
. "$here/lib/driver.sh"
bench_driver "$W/ab" "$here/gemm_blas_ab.c" "$root" "$root/build" -lopenblas
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX; elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
fi
lscpu | grep -E "Vendor ID|CPU family|^Model:|Stepping|Model name" | tr -s ' '
echo "OpenBLAS core: ${OPENBLAS_CORETYPE:-its own detection}; N=${1:-1024}, 1 thread"
OPENBLAS_NUM_THREADS=1 GPT2C_GEMM_AUTOTUNE=${GPT2C_GEMM_AUTOTUNE:-1} "$W/ab" "${1:-1024}" "${2:-20}"
