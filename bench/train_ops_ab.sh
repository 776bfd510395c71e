#!/usr/bin/env bash
# The non-GEMM training ops alone (bench/train_ops_micro.c), before vs after:
# built against two build trees (libgpt2c.a; each tree's own headers), run
# interleaved for R rounds at 1 thread (thread CPU time, median per op), and
# the per-op medians over rounds with the after/before ratio.
# Usage: bench/train_ops_ab.sh OLD_TREE NEW_TREE   (each with build/libgpt2c.a)
#   R=3 rounds, REPS=5 calls per op, SHAPES="4x64 4x1024" (BxT), PREC="fp32 bf16"
set -eu
OLD=$1 NEW=$2
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib/driver.sh"
for t in OLD NEW; do
  d=${!t}
  def=(); grep -q attention_forward_bf16 "$d/src/kernels/ops.h" && def=(-DHAVE_ATTENTION_BF16)
  bench_driver "$W/$t" "$here/train_ops_micro.c" "$d" "$d/build" "${def[@]}"
done
lscpu | grep -E "Vendor ID|CPU family|^Model:|Model name" | tr -s ' '
uptime
for r in $(seq "${R:-3}"); do
  for s in ${SHAPES:-4x64 4x1024}; do
    for p in ${PREC:-fp32 bf16}; do
      for t in OLD NEW; do
        "$W/$t" "${s%x*}" "${s#*x}" "${REPS:-5}" "$p" | sed "s/^/$t $s $p /"
      done
    done
  done
done > "$W/out"
python3 - "$W/out" <<'PY'
import re, statistics, sys, collections
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"(OLD|NEW) (\S+) (\S+) (.+?)\s+([\d.]+) ms$", line.rstrip())
    if m: d[(m[2], m[3], m[4].strip(), m[1])].append(float(m[5]))
keys = sorted({k[:3] for k in d}, key=lambda k: (k[0], k[1]))
print("%-8s %-5s %-28s %10s %10s %7s" % ("BxT", "prec", "op", "before ms", "after ms", "ratio"))
for k in keys:
    o, n = d.get(k + ("OLD",)), d.get(k + ("NEW",))
    if not o or not n: continue
    mo, mn = statistics.median(o), statistics.median(n)
    print("%-8s %-5s %-28s %10.3f %10.3f %7.3f" % (k[0], k[1], k[2], mo, mn, mn / mo if mo else float("nan")))
PY
