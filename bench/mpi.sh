#!/usr/bin/env bash
# Data-parallel training on one machine over loopback / shared memory
# (issue 15): GPT-2 124M at T=64, tokens per second of
#   p1_t2             1 process x 2 threads (B=4)      the single-process baseline
#   np1_t1            mpirun -np 1 x 1 thread (B=4)
#   np2_b2            mpirun -np 2 x 1 thread (B=2 each): the same global batch of 4
#                     (overlapped, wte's LM-head part reduced early: the defaults)
#   np2_b2_wtelate    the same, wte reduced whole after backward (GPT2C_DIST_WTE_EARLY=0)
#   np2_b2_nooverlap  all buckets reduced after backward (--overlap 0)
#   np2_b2_zero1      ZeRO-1: gradients reduce-scattered, parameters all-gathered
#   np2_b2_zero1_ar   ZeRO-1 with the all-reduce (GPT2C_DIST_ZERO_ALLREDUCE=1)
#   np2_b2_zero1_noov, np2_b2_zero1_ar_noov  the two with --overlap 0: the collective
#                     alone after a barrier, so its time is not mixed with backward's
#   np2_b2_ring       Open MPI's ring instead of its default (binomial tree) for
#                     in-place MPI_Iallreduce (--mca coll_libnbc_iallreduce_algorithm 1)
#   np2_b4            mpirun -np 2 x B=4: global batch 8 (weak scaling)
# plus each rank's gradient bytes, the collective's span, the part waited for
# after backward and the part hidden behind it, and peak RSS (GPT2C_DIST_STATS=1).
# Configurations alternate, REPS rounds; the summary gives medians over steps
# 2.. of all rounds and the ratios the cost model in docs/DISTRIBUTED.md is
# checked against.  Results go to OUT (default out/bench/mpi).
# Usage: bench/mpi.sh [BUILD_DIR] [OUT] [STEPS] [REPS]
#   CONFIGS="p1_t2 np2_b2 ..." runs only those; SUMMARY_ONLY=1 re-summarizes OUT.
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
ALL="p1_t2 np1_t1 np2_b2 np2_b2_wtelate np2_b2_nooverlap np2_b2_zero1 np2_b2_zero1_ar np2_b2_zero1_noov np2_b2_zero1_ar_noov np2_b2_ring np2_b4"
if [ "${SUMMARY_ONLY:-0}" != 1 ]; then
  { uname -a; lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:"; nproc; uptime; } > "$OUT/machine.txt"
  [ -d "$OUT/ts" ] || "$G" tokenize --vocab "$DATA/gpt2-tokenizer" --in "$DATA/tinyshakespeare/input.txt" --out "$OUT/ts" --name ts > /dev/null 2>&1
fi
TRAIN=(--model gpt2 --data "$OUT/ts/ts_train_*.bin" --seq 64 --steps "$STEPS" --eval-every 0)

want() { [ -z "${CONFIGS:-}" ] || [[ " $CONFIGS " == *" $1 "* ]]; }
run() { # NAME CMD...
  local name=$1; shift
  want "$name" || return 0
  echo "== $name: $*" | tee -a "$OUT/commands.txt"
  "$@" --log "$OUT/$name.r$rep.jsonl" > "$OUT/$name.r$rep.txt" 2>&1 || { echo "failed: $name"; cat "$OUT/$name.r$rep.txt"; exit 1; }
}
NP2=("${MPI[@]}" -np 2)
for rep in $( [ "${SUMMARY_ONLY:-0}" = 1 ] || seq 1 "$REPS"); do
  run p1_t2 "$G" train "${TRAIN[@]}" --batch 4 --threads 2
  run np1_t1 "${MPI[@]}" -np 1 "$G" train "${TRAIN[@]}" --batch 4 --threads 1
  run np2_b2 "${NP2[@]}" "$G" train "${TRAIN[@]}" --batch 2 --threads 1
  run np2_b2_wtelate "${NP2[@]}" -x GPT2C_DIST_WTE_EARLY=0 "$G" train "${TRAIN[@]}" --batch 2 --threads 1
  run np2_b2_nooverlap "${NP2[@]}" "$G" train "${TRAIN[@]}" --batch 2 --threads 1 --overlap 0
  run np2_b2_zero1 "${NP2[@]}" "$G" train "${TRAIN[@]}" --batch 2 --threads 1 --zero 1
  run np2_b2_zero1_ar "${NP2[@]}" -x GPT2C_DIST_ZERO_ALLREDUCE=1 "$G" train "${TRAIN[@]}" --batch 2 --threads 1 --zero 1
  run np2_b2_zero1_noov "${NP2[@]}" "$G" train "${TRAIN[@]}" --batch 2 --threads 1 --zero 1 --overlap 0
  run np2_b2_zero1_ar_noov "${NP2[@]}" -x GPT2C_DIST_ZERO_ALLREDUCE=1 "$G" train "${TRAIN[@]}" --batch 2 --threads 1 --zero 1 --overlap 0
  run np2_b2_ring "${MPI[@]}" --mca coll_libnbc_iallreduce_algorithm 1 -np 2 "$G" train "${TRAIN[@]}" --batch 2 --threads 1
  run np2_b4 "${NP2[@]}" "$G" train "${TRAIN[@]}" --batch 4 --threads 1
done
[ "${SUMMARY_ONLY:-0}" = 1 ] || uptime >> "$OUT/machine.txt"

# median of the numbers on stdin
median() { sort -n | awk '{ a[NR] = $1 } END { if (!NR) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# ms/step of a config: steps >= 2 of every round
step_ms() { cat "$OUT/$1".r*.jsonl 2>/dev/null | grep '"loss"' | grep -v '"step":[01],' | sed 's/.*"ms":\([0-9.]*\).*/\1/' | median; }
# a field of the ranks' statistics lines (per step), median over ranks and rounds:
# stat CONFIG span|waited|hidden|mib|gather|rss
stat() {
  local re
  case $2 in
    mib) re='s/.*, \(all-reduce\|reduce-scatter\) \([0-9.]*\) MiB\/step.*/\2/' ;;
    span) re='s/.* MiB\/step over \([0-9.]*\) ms\/step.*/\1/' ;;
    waited) re='s/.*after backward \([0-9.]*\) ms\/step.*/\1/' ;;
    hidden) re='s/.*(hidden \([0-9.]*\);.*/\1/' ;;
    gather) re='s/.*all-gather \([0-9.]*\) ms\/step.*/\1/' ;;
    rss) re='s/.*peak RSS \([0-9.]*\) GiB.*/\1/' ;;
  esac
  cat "$OUT/$1".r*.txt 2>/dev/null | grep "^gpt2c train: rank [0-9]*: " | sed "$re" | median
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "nan" || b == "nan" || b == 0) print "unavailable"; else printf "%.2f", a / b }'; }
{
  echo "machine: $(grep -E 'Model name' "$OUT/machine.txt" | sed 's/.*: *//'), family $(grep -E '^CPU family' "$OUT/machine.txt" | sed 's/.*: *//') model $(grep -E '^Model:' "$OUT/machine.txt" | sed 's/.*: *//'), $(grep -E '^[0-9]+$' "$OUT/machine.txt") cores; load average before / after: $(grep -o 'load average: [0-9.]*' "$OUT/machine.txt" | sed 's/load average: //' | tr '\n' ' ')"
  printf "%-18s %9s %9s %7s  %9s %9s %9s %9s %9s %8s\n" config "ms/step" "tok/s" tokens "MiB/step" "comm ms" "waited" "hidden" "gather" "RSS GiB"
  for name in $ALL; do
    want "$name" && ls "$OUT/$name".r*.jsonl >/dev/null 2>&1 || continue
    ms=$(step_ms "$name")
    case $name in np2_b4) tok=512 ;; *) tok=256 ;; esac
    tps=$(awk -v ms="$ms" -v t="$tok" 'BEGIN { printf "%.0f", t / (ms / 1000) }')
    printf "%-18s %9.1f %9s %7s  %9s %9s %9s %9s %9s %8s\n" "$name" "$ms" "$tps" "$tok" "$(stat "$name" mib)" "$(stat "$name" span)" \
      "$(stat "$name" waited)" "$(stat "$name" hidden)" "$(stat "$name" gather)" "$(stat "$name" rss)"
  done
  echo
  echo "ratios (what docs/DISTRIBUTED.md's cost model is checked against):"
  p1=$(step_ms p1_t2)
  for name in np1_t1 np2_b2 np2_b4; do
    ms=$(step_ms "$name"); [ "$ms" = nan ] || [ "$p1" = nan ] && continue
    case $name in np2_b4) f=2 ;; *) f=1 ;; esac
    echo "  tokens/s $name / p1_t2: $(awk -v a="$p1" -v b="$ms" -v f=$f 'BEGIN { printf "%.2f", f * a / b }')"
  done
  echo "  step, overlap / --overlap 0: $(ratio "$(step_ms np2_b2)" "$(step_ms np2_b2_nooverlap)")"
  echo "  waited after backward, wte early / wte late: $(ratio "$(stat np2_b2 waited)" "$(stat np2_b2_wtelate waited)")"
  # the all-reduce's own time is --overlap 0's (after a barrier); overlapped, only the wait after backward is exposed
  # (the overlapped span runs from the first post to the last completion and includes backward's compute)
  ar=$(stat np2_b2_nooverlap span)
  for name in np2_b2 np2_b2_wtelate; do
    echo "  exposed / all-reduce time, $name: $(ratio "$(stat $name waited)" "$ar") (hidden: 1 - that)"
  done
  echo "  collective time, reduce-scatter / all-reduce (ZeRO-1, --overlap 0; ring model: 0.5): $(ratio "$(stat np2_b2_zero1_noov span)" "$(stat np2_b2_zero1_ar_noov span)")"
  echo "  reduce-scatter + all-gather / all-reduce + all-gather (--overlap 0; ring model: 0.67): $(awk -v a="$(stat np2_b2_zero1_noov span)" -v b="$(stat np2_b2_zero1_noov gather)" -v c="$(stat np2_b2_zero1_ar_noov span)" -v d="$(stat np2_b2_zero1_ar_noov gather)" 'BEGIN { if (a == "nan" || c == "nan") print "unavailable"; else printf "%.2f", (a + b) / (c + d) }')"
  echo "  step, ZeRO-1 reduce-scatter / all-reduce: $(ratio "$(step_ms np2_b2_zero1)" "$(step_ms np2_b2_zero1_ar)")"
  echo "  peak RSS, ZeRO-1 / plain: $(ratio "$(stat np2_b2_zero1 rss)" "$(stat np2_b2 rss)")"
  echo "  all-reduce span, ring / default tree (model at N=2: 0.5): $(ratio "$(stat np2_b2_ring span)" "$(stat np2_b2 span)")"
} | tee "$OUT/summary.txt"

# the all-reduce alone (bench/mpi_allreduce.c): one block's bucket group and the whole gradient,
# Open MPI's default for in-place MPI_Iallreduce (binomial tree) against its ring
if [ "${SUMMARY_ONLY:-0}" = 1 ] || [ -n "${CONFIGS:-}" ]; then exit 0; fi
mpicc -O2 bench/mpi_allreduce.c -o "$OUT/mpi_allreduce"
{
  for bytes in 28.35e6 497.9e6; do
    echo "default: $("${MPI[@]}" -np 2 "$OUT/mpi_allreduce" $bytes 5 2>&1 | tail -1)"
    echo "ring:    $("${MPI[@]}" --mca coll_libnbc_iallreduce_algorithm 1 -np 2 "$OUT/mpi_allreduce" $bytes 5 2>&1 | tail -1)"
  done
} | tee "$OUT/allreduce.txt"
