#!/usr/bin/env bash
# The bf16 engine (kernels/cpu/bf16_engine.h: vdpbf16ps or fp32 FMAs,
# measured per CPU, and the AMX tiles for the GEMM where the CPU has AMX) on
# a CPU that has AVX512_BF16, in one short pass for a lent machine:
#   build the cpu backend (build-cpu/; DEPS=dir of .debs as bench/gpu_check.sh);
#   the tests that touch bf16, the GEMMs and the peaks;
#   (test_gemm_bf16_amx prints what the hardware's TDPBF16PS does with the
#   pair order and denormals, and runs the AMX GEMM against the oracle);
#   then on two physical cores (as bench/cpu_check.sh): `bench peak`; `bench
#   gemm --precision bf16` with each engine of ENGINES (GPT2C_BF16_ENGINE
#   values; default "auto vdpbf16ps"; on an AMX CPU "auto fma" sets the AMX
#   tiles the engine chose against the FMA engine); `bench gemm` fp32;
#   `bench train` B=4 T=64 (and T=256 with TRAIN_T256=1), fp32 and bf16
#   interleaved, for each engine; `bench generate` prefill P=512 and decode
#   at batch 8, fp32 then bf16 on each engine; bench/amx_peak.c (the AMX
#   ceiling, where the CPU has AMX);
#   then the whole test suite (2 threads a test) in the time left.
# Usage: bench/bf16_engine_check.sh    env: OUT (log folder, default .), ENGINES, TRAIN_T256
set -u
OUT=${OUT:-.}
ENGINES=${ENGINES:-auto vdpbf16ps}
E1=${ENGINES##* } # the engine set against auto
exec > >(tee "$OUT/bf16_engine_check.log") 2>&1
step() { echo; echo "=== $* ($(date +%T))"; }
. "$(dirname "$0")/lib/lent_machine.sh"
J=$(nproc)
step machine
lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:|Stepping|^CPU\(s\)|L2" || true
unpack_debs "${DEPS:-}"
blas_cmake_flags AUTO

step build
cmake -S . -B build-cpu -DCMAKE_BUILD_TYPE=Release -DGPT2C_CUDA=OFF -DGPT2C_MPI=OFF "${BLAS_FLAGS[@]}" >/dev/null 2>&1 ||
  { echo "configure failed"; exit 1; }
cmake --build build-cpu -j"$J" 2>&1 | grep -E 'error|warning' | head -20
G=build-cpu/gpt2c
[ -x $G ] || { echo "build failed"; exit 1; }
$G --version | head -4

step "tests: bf16, GEMM, peaks"
(cd build-cpu && OMP_NUM_THREADS=2 timeout 120 ctest -j8 --timeout 100 -R 'bf16|gemm|peak|engine|amx' 2>&1 | tail -25)
(cd build-cpu && OMP_NUM_THREADS=2 timeout 60 ./tests/test_gemm_bf16_amx 2>&1 | grep -v '^  (' | tail -12)

CPUS=$(two_cores)
T="taskset -c $CPUS"
step "bench peak on CPUs $CPUS (2 threads)"
$T timeout 60 $G bench peak --threads 2 --remeasure
step "bench gemm bf16: the engine chosen, then GPT2C_BF16_ENGINE=$E1"
$T timeout 90 $G bench gemm --precision bf16 --threads 2 --n 256,1024 --no-blas | grep -v '^  (\|^   %'
GPT2C_BF16_ENGINE=$E1 $T timeout 90 $G bench gemm --precision bf16 --threads 2 --n 256 --no-blas | grep -v '^  (\|^   %'
step "bench gemm fp32"
$T timeout 90 $G bench gemm --precision fp32 --threads 2 --n 256,1024 | grep -v '^  (\|^   %'
step "bench train B=4 T=64 (T=256 with TRAIN_T256=1): for each of ENGINES ($ENGINES)"
for t in 64 ${TRAIN_T256:+256}; do for e in $ENGINES; do
  echo "T=$t GPT2C_BF16_ENGINE=$e"
  GPT2C_BF16_ENGINE=$e $T timeout 90 $G bench train --model gpt2 --batch 4 --seq $t --steps 3 --warmup 1 --threads 2 \
    --precision fp32,bf16 | grep -E '^bench train|^  backend|^  cpu'
done; done
step "bench generate: prefill P=512, decode batch 8 (32 tokens after P=128)"
for c in "512 1 2" "128 8 32"; do
  set -- $c
  for pe in "fp32 auto" "bf16 auto" "bf16 $E1"; do
    set -- $c $pe
    r=$(GPT2C_BF16_ENGINE=$5 $T timeout 60 $G bench generate --model gpt2 --prompt-len $1 --batch $2 --tokens $3 --runs 3 \
        --threads 2 --precision $4 --no-peak --json)
    echo "P=$1 batch $2 $4 engine $5: prefill $(grep -o '"prefill_tok_s":[0-9.]*' <<< "$r" | cut -d: -f2) tok/s," \
      "decode $(grep -o '"decode_tok_s":[0-9.]*' <<< "$r" | cut -d: -f2) tok/s"
  done
done
step "AMX: bench/amx_peak.c"
gcc -O2 -fopenmp -mamx-tile -mamx-bf16 bench/amx_peak.c -o build-cpu/amx_peak && $T timeout 30 build-cpu/amx_peak
step "the whole test suite (2 threads a test)"
(cd build-cpu && OMP_NUM_THREADS=2 timeout 90 ctest -j8 --timeout 85 2>&1 | tail -25)
step end
