#!/usr/bin/env bash
# Issue 12's CPU figures on a machine met only briefly (a lent GPU machine's
# host CPU, say), in one pass of a few minutes, on two physical cores as the
# issue's figures are:
#   the CPU's signature (vendor/family/model/stepping), its AVX-512 / AMX
#   flags, caches and topology, and the two cores chosen (one logical CPU
#   from each of two distinct physical cores; the pass runs under taskset);
#   the BLAS core gpt2c picks for it (`gpt2c --version`);
#   then bench/bf16.sh with 2 threads: `bench peak`, `bench gemm` fp32 and
#   bf16 on GPT-2 124M's shapes (N = 256 and 1024, against OpenBLAS when the
#   build has it; the autotune runs at first use, cached per CPU signature),
#   `bench train` B=4 at each T of SEQS (fp32 and bf16 interleaved in one
#   process) beside PyTorch's tuned fp32 step, and `bench generate` (prefill
#   P=128 and 512, decode at batch 1 and 8), fp32 then bf16.
# Usage: bench/cpu_check.sh [path/to/gpt2c]    (default build/gpt2c)
#   env: R rounds (default 1), SEQS (default "64 256"), TORCH=0 skips
#        PyTorch, LIMIT seconds for the whole of bench/bf16.sh (default 420)
set -u
G=${1:-build/gpt2c}
here=$(dirname "$0")
echo "=== CPU"
lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:|Stepping|^CPU\(s\)|Thread|Core\(s\)|Socket|L1d|L2|L3|NUMA node\(s\)" || true
echo "flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx512|amx|avx_vnni|fma$|avx2$)' | tr '\n' ' ')"
uptime
. "$here/lib/lent_machine.sh"
CPUS=$(two_cores)
echo "cores used: logical CPUs $CPUS"
"$G" --version | grep -E 'SIMD|BLAS|OpenMP' || true
echo
echo "=== bench/bf16.sh on CPUs $CPUS, 2 threads (R=${R:-1})"
taskset -c "$CPUS" env GEMM=1 THREADS=2 CPUTIME=0 R="${R:-1}" MODEL=1 MODEL_THREADS=2 SEQS="${SEQS:-64 256}" \
  TORCH="${TORCH:-1}" TORCH_PRECISIONS=fp32 timeout "${LIMIT:-420}" bash "$here/bf16.sh" "$G"
echo "rc=$?"
for f in ~/.cache/gpt2c/*.json; do [ -f "$f" ] && { echo "--- $f"; cat "$f"; echo; }; done
