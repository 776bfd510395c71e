#!/usr/bin/env bash
# Data-parallel training on one machine over loopback / shared memory
# (issue 15): GPT-2 124M at T=64, tokens per second of
#   1 process x 2 threads (B=4)         the single-process baseline
#   mpirun -np 1 x 1 thread (B=4)
#   mpirun -np 2 x 1 thread (B=2 each)  the same global batch of 4
#   mpirun -np 2 x 1 thread (B=4 each)  global batch 8 (weak scaling)
#   the same with --overlap 0 (all-reduce after backward), --zero 1, and
#   Open MPI's ring instead of its default (binomial tree) for in-place
#   MPI_Iallreduce (--mca coll_libnbc_iallreduce_algorithm 1)
# plus each rank's all-reduce bytes, time inside backward (overlapped) and
# waiting after it, and peak RSS (GPT2C_DIST_STATS=1).  Configurations
# alternate, REPS rounds; the summary gives the median ms/step over steps
# 2.. of all rounds.  Results go to OUT (default out/bench/mpi).
# Usage: bench/mpi.sh [BUILD_DIR] [OUT] [STEPS] [REPS]
set -eu
BUILD="${1:-build}"
OUT="${2:-out/bench/mpi}"
STEPS="${3:-6}"
REPS="${4:-1}"
G="$BUILD/gpt2c"
DATA="${GPT2C_DATA:-../shared/data}"
mkdir -p "$OUT"
# root in a container; shared memory keeps its single-copy (CMA) path here: setting
# OMPI_MCA_btl_vader_single_copy_mechanism=none (what the tests do) made a 120 MB all-reduce 2-5x slower
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GPT2C_DIST_STATS=1
MPI=(mpirun --oversubscribe --bind-to none)
[ "${SUMMARY_ONLY:-0}" = 1 ] || { uname -a; lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:"; nproc; uptime; } > "$OUT/machine.txt"
[ -d "$OUT/ts" ] || "$G" tokenize --vocab "$DATA/gpt2-tokenizer" --in "$DATA/tinyshakespeare/input.txt" --out "$OUT/ts" --name ts > /dev/null 2>&1
TRAIN=(--model gpt2 --data "$OUT/ts/ts_train_*.bin" --seq 64 --steps "$STEPS" --eval-every 0)

run() { # NAME CMD...
  local name=$1; shift
  want "$name" || return 0
  echo "== $name: $*" | tee -a "$OUT/commands.txt"
  "$@" --log "$OUT/$name.r$rep.jsonl" > "$OUT/$name.r$rep.txt" 2>&1 || { echo "failed: $name"; cat "$OUT/$name.r$rep.txt"; exit 1; }
}
# CONFIGS="p1_t2 np2_b2 ..." runs only those (default: all)
want() { [ -z "${CONFIGS:-}" ] || [[ " $CONFIGS " == *" $1 "* ]]; }
for rep in $( [ "${SUMMARY_ONLY:-0}" = 1 ] || seq 1 "$REPS"); do
  run p1_t2 "$G" train "${TRAIN[@]}" --batch 4 --threads 2
  run np1_t1 "${MPI[@]}" -np 1 "$G" train "${TRAIN[@]}" --batch 4 --threads 1
  run np2_b2 "${MPI[@]}" -np 2 "$G" train "${TRAIN[@]}" --batch 2 --threads 1
  run np2_b2_nooverlap "${MPI[@]}" -np 2 "$G" train "${TRAIN[@]}" --batch 2 --threads 1 --overlap 0
  run np2_b2_zero1 "${MPI[@]}" -np 2 "$G" train "${TRAIN[@]}" --batch 2 --threads 1 --zero 1
  run np2_b2_ring "${MPI[@]}" --mca coll_libnbc_iallreduce_algorithm 1 -np 2 "$G" train "${TRAIN[@]}" --batch 2 --threads 1
  run np2_b4 "${MPI[@]}" -np 2 "$G" train "${TRAIN[@]}" --batch 4 --threads 1
done
[ "${SUMMARY_ONLY:-0}" = 1 ] || uptime >> "$OUT/machine.txt"

# summary: median ms/step (steps >= 2), global tokens/s, and the ranks' communication lines
{
  printf "%-18s %9s %9s %8s  %s\n" config "ms/step" "tok/s" "tokens" "per-rank communication (first round)"
  for name in p1_t2 np1_t1 np2_b2 np2_b2_nooverlap np2_b2_zero1 np2_b2_ring np2_b4; do
    want "$name" && ls "$OUT/$name".r*.jsonl >/dev/null 2>&1 || continue
    ms=$(cat "$OUT/$name".r*.jsonl | grep '"loss"' | grep -v '"step":[01],' | sed 's/.*"ms":\([0-9.]*\).*/\1/' | sort -n |
      awk '{ a[NR] = $1 } END { if (NR % 2) m = a[(NR + 1) / 2]; else m = (a[NR / 2] + a[NR / 2 + 1]) / 2; print m }')
    case $name in np2_b4) tok=512 ;; *) tok=256 ;; esac
    tps=$(awk -v ms="$ms" -v t="$tok" 'BEGIN { printf "%.0f", t / (ms / 1000) }')
    printf "%-18s %9.1f %9s %8s\n" "$name" "$ms" "$tps" "$tok"
    grep -h "gpt2c train: rank" "$OUT/$name.r1.txt" | sed 's/^gpt2c train: /      /' || true
  done
} | tee "$OUT/summary.txt"

# the all-reduce alone (bench/mpi_allreduce.c): one block's bucket group and the whole gradient,
# Open MPI's default for in-place MPI_Iallreduce (binomial tree) against its ring
[ "${SUMMARY_ONLY:-0}" = 1 ] || [ -n "${CONFIGS:-}" ] && exit 0
mpicc -O2 bench/mpi_allreduce.c -o "$OUT/mpi_allreduce"
{
  for bytes in 28.35e6 497.9e6; do
    echo "default: $("${MPI[@]}" -np 2 "$OUT/mpi_allreduce" $bytes 5 2>&1 | tail -1)"
    echo "ring:    $("${MPI[@]}" --mca coll_libnbc_iallreduce_algorithm 1 -np 2 "$OUT/mpi_allreduce" $bytes 5 2>&1 | tail -1)"
  done
} | tee "$OUT/allreduce.txt"
