#!/usr/bin/env bash
# Issue 11 (refactor) before/after: `gpt2c bench train` (124M, B=4 T=64, 2
# threads) and `gpt2c bench generate` (124M, 2 threads), old and new binaries
# alternated in one sitting so drift on a shared machine hits both alike;
# prints every run's median and the median of the medians.
#   bench/refactor.sh OLD_GPT2C NEW_GPT2C [rounds]
# OLD_GPT2C: the commit before the refactor (bc38b52) built into its own
# folder, e.g.  git archive bc38b52 | tar -x -C /tmp/old && cmake -S /tmp/old
# -B /tmp/old/build -DCMAKE_BUILD_TYPE=Release -DGPT2C_CUDA=OFF && cmake
# --build /tmp/old/build -j2 --target gpt2c
# The second part of issue 11 (shared option rows, opaque model, one block
# description for training and inference, prefixed symbols) compares against
# 4e1df83 the same way.
set -euo pipefail
OLD=${1:?old gpt2c}; NEW=${2:?new gpt2c}; ROUNDS=${3:-3}
lscpu | grep -E "Vendor ID|Model name|CPU family|^Model:" | tr -s ' '
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
train() { "$1" bench train --model gpt2 --batch 4 --seq 64 --threads 2 --steps 3 --warmup 1 --json |
          python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["median_ms"])'; }
gen() { "$1" bench generate --model gpt2 --threads 2 --prompt-len 16 --tokens 16 --runs 1 --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("decode_tok_s", d.get("decode", {}).get("tok_s", "nan")))'; }
: >/tmp/refactor_bench_train_old; : >/tmp/refactor_bench_train_new; : >/tmp/refactor_bench_gen_old; : >/tmp/refactor_bench_gen_new
for r in $(seq "$ROUNDS"); do
  o=$(train "$OLD"); n=$(train "$NEW"); echo "round $r bench train ms/step: old $o new $n"
  echo "$o" >>/tmp/refactor_bench_train_old; echo "$n" >>/tmp/refactor_bench_train_new
  o=$(gen "$OLD"); n=$(gen "$NEW"); echo "round $r bench generate decode tok/s: old $o new $n"
  echo "$o" >>/tmp/refactor_bench_gen_old; echo "$n" >>/tmp/refactor_bench_gen_new
done
to=$(median </tmp/refactor_bench_train_old); tn=$(median </tmp/refactor_bench_train_new)
go=$(median </tmp/refactor_bench_gen_old); gn=$(median </tmp/refactor_bench_gen_new)
echo "bench train  median ms/step: old $to new $tn (new/old $(python3 -c "print(round($tn/$to,3))"))"
echo "bench generate median decode tok/s: old $go new $gn (new/old $(python3 -c "print(round($gn/$go,3))"))"
