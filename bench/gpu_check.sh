#!/usr/bin/env bash
# The cuda backend's checks on a machine with an NVIDIA GPU, in one pass that
# fits a short lease (docs/CUDA.md, "Verify on a GPU machine"):
#   build with the cuda backend; test_cuda_ops (every op vs ref on ragged
#   shapes); test_reference (the PyTorch fixtures through every backend,
#   cuda included); cli_cuda_backend (train 8 steps on cuda vs cpu, eval);
#   50 training steps on tinyshakespeare, cuda vs cpu losses; bench train
#   GPT-2 124M at B=8 T=1024 on cuda (fp32, then TF32 matmuls; each again
#   with the attention's row kernels) and PyTorch
#   (eager fp32 and tf32, compiled bf16) on the same GPU; gpt2c profile of
#   that step (GPU time per op); compute-sanitizer memcheck over test_cuda_ops.
# Each step has its own time limit and the log says which passed.
#   DEPS=dir of Debian .debs (jansson, utf8proc, pkgconf; OpenBLAS and libgfortran5
#        for bench/cpu_check.sh's BLAS columns) unpacked into / where
#        the machine lacks them;  SHARDS=dir with ts_train_*.bin / ts_val_*.bin
#   OUT=folder for the log (default .);  PYTORCH=its precisions (default
#   "fp32 tf32 bf16"; bf16 is compiled, about a minute);  MODELS=the models
#   benchmarked (default d12 = GPT-2 124M; "d12 d24" adds 350M)
set -u
OUT=${OUT:-.}
LOG=$OUT/gpu_check.log
exec > >(tee "$LOG") 2>&1
step() { echo; echo "=== $* ($(date +%T))"; }
. "$(dirname "$0")/lib/lent_machine.sh"
J=$(nproc)

step machine
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader || exit 1
nvcc --version | tail -2
unpack_debs "${DEPS:-}"
pkg-config --modversion jansson || echo "jansson: not found"
blas_cmake_flags OFF

step build
mkdir -p build-gpu # the build, and this script's scratch files
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DGPT2C_CUDA=ON -DGPT2C_MPI=OFF \
  "${BLAS_FLAGS[@]}" >build-gpu/configure.log 2>&1 || { tail -30 build-gpu/configure.log; exit 1; }
grep -E 'gpt2c:' build-gpu/configure.log | head -20
cmake --build build-gpu -j"$J" --target gpt2c test_cuda_ops test_reference test_cuda_table 2>&1 | grep -E 'error|warning|Error' | head -40
[ -x build-gpu/gpt2c ] || { echo "build failed"; exit 1; }
G=build-gpu/gpt2c
$G --version | head -6

step test_cuda_ops
timeout 150 build-gpu/tests/test_cuda_ops 2>&1 | grep -v ': bitwise equal\|^shape' | tail -60
echo "rc=${PIPESTATUS[0]}"

step test_reference
(cd build-gpu/tests && timeout 120 ./test_reference 2>&1 | tail -30; echo "rc=${PIPESTATUS[0]}")

step cli_cuda_backend
timeout 120 bash tests/cli_cuda_backend.sh "$G" 2>&1 | tail -15
echo "rc=${PIPESTATUS[0]}"

if [ -n "${SHARDS:-}" ]; then
  step "50 steps on tinyshakespeare: cuda vs cpu"
  A=(--model gpt2 --layers 4 --heads 4 --embd 256 --ctx 256 --data "$SHARDS/ts_train_*.bin" --batch 8 --seq 256
     --lr 6e-4 --seed 1 --steps 50)
  timeout 60 $G train "${A[@]}" --backend cuda --log build-gpu/cuda50.jsonl >/dev/null && echo "cuda: done"
  timeout 120 $G train "${A[@]}" --backend cpu --log build-gpu/cpu50.jsonl >/dev/null && echo "cpu: done"
  paste <(grep -o '"loss":[0-9.eE+-]*' build-gpu/cuda50.jsonl | cut -d: -f2) <(grep -o '"loss":[0-9.eE+-]*' build-gpu/cpu50.jsonl | cut -d: -f2) |
    awk '{ d = $1 - $2; if (d < 0) d = -d; r = d / $2; if (r > w) { w = r; ws = NR - 1 }; n++;
           if (NR == 1 || NR % 10 == 0) print "step " NR-1 ": cuda " $1 "  cpu " $2 }
         END { printf "steps %d, worst relative difference %.3g at step %d\n", n, w, ws }'
fi

for model in ${MODELS:-d12}; do
  step "bench train: $model, B=8, T=1024: fp32, then TF32 matmuls"
  BT=(bench train --model "$model" --backend cuda --batch 8 --seq 1024 --steps 10 --warmup 3)
  timeout 120 $G "${BT[@]}" 2>&1 | grep -v '^  (\|^   ' | tail -4
  GPT2C_CUDA_TF32=1 timeout 120 $G "${BT[@]}" 2>&1 | grep -v '^  (\|^   ' | tail -3
  echo "the same two with the attention's row kernels (GPT2C_CUDA_ATT_SIMPLE=1):"
  GPT2C_CUDA_ATT_SIMPLE=1 timeout 120 $G "${BT[@]}" 2>&1 | grep '^  cuda  '
  GPT2C_CUDA_ATT_SIMPLE=1 GPT2C_CUDA_TF32=1 timeout 120 $G "${BT[@]}" 2>&1 | grep '^  cuda  '
done

step "profile: GPT-2 124M, B=8, T=1024, GPU time per op (CUDA events)"
mkdir -p "$OUT/prof"
timeout 120 $G profile --backend cuda --model gpt2 --batch 8 --seq 1024 --trials 3 --warmup 1 \
  --no-counters --out "$OUT/prof" >"$OUT/profile.txt" 2>&1
echo "rc=$?"
sed -n '/^Phases/,/^Components/p' "$OUT/profile.txt"
grep -i -E 'peak|roofline' "$OUT/profile.txt" | head -12

step "compute-sanitizer memcheck: test_cuda_ops"
timeout 100 compute-sanitizer --tool memcheck --print-limit 20 build-gpu/tests/test_cuda_ops 2>&1 |
  grep -v ': bitwise equal\|^shape\|^  [a-z_]* (' | tail -30
echo "rc=${PIPESTATUS[0]}"
step "PyTorch on the same GPU: B=8, T=1024"
if python3 -c 'import torch' 2>/dev/null; then
  for model in ${MODELS:-d12}; do
    for p in ${PYTORCH:-fp32 tf32 bf16}; do
      c=--no-compile; [ "$p" = bf16 ] && c=--compile
      timeout 200 python3 tools/reference/bench_pytorch_gpu.py --model "$model" --batch 8 --seq 1024 --precision $p $c \
        --steps 10 --warmup 5 2>&1 | tail -1
    done
  done
else
  echo "no torch in python3: skipped"
fi
step end
