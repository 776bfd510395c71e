#!/usr/bin/env bash
# Training step, old vs new binary (issue 12), GPT-2 124M, B=4, 2 threads:
#  1. `bench train` ms/step for each precision in PRECS (default "fp32 bf16")
#     and T in SEQS (default "64 256"), old and new alternated for R rounds
#     (default 3), so drift on a shared machine hits both alike (the order
#     flips every round: on a shared VM the second of two back-to-back runs
#     was seen up to 20% slower); medians and new/old.
#  2. PERF=1 (needs `perf`; software cpu-clock sampling, so it works without
#     a PMU): where the step's CPU time goes, per binary and precision at T=64
#     (the first T of SEQS): the share of samples in the GEMM micro-kernels,
#     in operand packing (gemm_unit's inlined packing, pack_* and the fp32 ->
#     bf16 converters) and in AdamW.  Shares within one run do not depend on
#     the machine's load the way wall times do.
#   bench/step_ab.sh OLD_GPT2C NEW_GPT2C
set -euo pipefail
OLD=${1:?old gpt2c}; NEW=${2:?new gpt2c}; R=${R:-3}
lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:|Stepping" | tr -s ' '
uptime
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
train() { "$1" bench train --model gpt2 --batch 4 --seq "$3" --threads 2 --steps "${STEPS:-2}" --warmup 1 --precision "$2" --json |
          python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["median_ms"])'; }
D=$(mktemp -d)
for r in $(seq "$R"); do
  for p in ${PRECS:-fp32 bf16}; do for t in ${SEQS:-64 256}; do
    if [ $((r % 2)) = 1 ]; then o=$(train "$OLD" "$p" "$t"); n=$(train "$NEW" "$p" "$t")
    else n=$(train "$NEW" "$p" "$t"); o=$(train "$OLD" "$p" "$t"); fi
    echo "round $r $p T=$t ms/step: old $o new $n"
    echo "$o" >>"$D/$p-$t-old"; echo "$n" >>"$D/$p-$t-new"
  done; done
done
echo "| precision | T | old ms (median) | new ms | new/old |"
echo "|---|---|---|---|---|"
for p in ${PRECS:-fp32 bf16}; do for t in ${SEQS:-64 256}; do
  o=$(median <"$D/$p-$t-old"); n=$(median <"$D/$p-$t-new")
  echo "| $p | $t | $o | $n | $(python3 -c "print(f'{$n/$o:.3f}')") |"
done; done
if [ "${PERF:-0}" = 1 ]; then
  t=$(echo ${SEQS:-64 256} | cut -d' ' -f1)
  echo "| binary | precision | samples | micro-kernel | packing | packing / kernel | AdamW |"
  echo "|---|---|---|---|---|---|---|"
  for p in ${PRECS:-fp32 bf16}; do for b in old new; do
    g=$OLD; [ $b = new ] && g=$NEW
    # -D: skip model creation and the first (allocating) steps
    perf record -q -D 8000 -e cpu-clock -F 1000 -o "$D/perf.data" -- "$g" bench train --model gpt2 --batch 4 --seq "$t" \
      --threads 2 --steps 12 --precision "$p" >/dev/null 2>&1
    perf report -i "$D/perf.data" --no-children --sort symbol -n 2>/dev/null | grep -v '^#' |
      awk -v b=$b -v p=$p '$2 ~ /^[0-9]+$/ { n += $2; s = $4 }
        $2 ~ /^[0-9]+$/ && s ~ /^kern_/ { k += $2 }
        $2 ~ /^[0-9]+$/ && (s ~ /^pack_/ || s ~ /^f32_(pairs|2rows)$/ || s == "bf16_2rows" || s == "gemm_unit") { pk += $2 }
        $2 ~ /^[0-9]+$/ && s ~ /^adamw/ { ad += $2 }
        END { printf "| %s | %s | %d | %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", b, p, n, 100*k/n, 100*pk/n, 100*pk/k, 100*ad/n }'
  done; done
fi
rm -rf "$D"
