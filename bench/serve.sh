#!/usr/bin/env bash
# Serving benchmark (BENCHMARKS.md, "Serving"): `gpt2c serve` throughput and
# latency with 1, 4 and 16 concurrent streaming clients on loopback, beside
# `gpt2c generate --batch B` (the same model, prompt and length, no HTTP, no
# scheduling) as the bound.  GPT-2 124M shape with random weights, fp32.
#   bash bench/serve.sh            # REPS=3 sittings, interleaved; prints JSON lines
# Env: G (gpt2c binary), VOCAB, THREADS (2), MAXTOK (64), REQS (requests per client, 2), REPS (3),
#      QUANT (q8|q4|nf4: quantize the weights on load, both sides; default fp32)
set -eu
G=${G:-build/gpt2c}
VOCAB=${VOCAB:-../shared/data/gpt2-tokenizer}
THREADS=${THREADS:-2}
MAXTOK=${MAXTOK:-64}
REQS=${REQS:-2}
REPS=${REPS:-3}
Q=()
[ -n "${QUANT:-}" ] && Q=(--quant "$QUANT")
PROMPT="The quick brown fox jumps over the lazy dog. Once upon a time, in a land far away,"
echo "# weights ${QUANT:-fp32}; $(lscpu | sed -n 's/^Vendor ID: *//p') family $(lscpu | sed -n 's/^CPU family: *//p') model $(lscpu | sed -n 's/^Model: *//p') ($(lscpu | sed -n 's/^Model name: *//p')), $(nproc) cores, threads $THREADS"
LOG=$(mktemp)
trap 'rm -f "$LOG"; [ -n "${SPID:-}" ] && kill "$SPID" 2>/dev/null || true' EXIT
for rep in $(seq 1 "$REPS"); do
  for B in 1 4 16; do # the bound: one prefill, then B sequences per decode step
    s=$("$G" generate --model gpt2 "${Q[@]}" --vocab "$VOCAB" --prompt "$PROMPT" --max-tokens "$MAXTOK" --batch "$B" \
          --threads "$THREADS" --seed 1 --hugepages --stats 2>&1 >/dev/null | tail -1)
    echo "{\"rep\":$rep,\"what\":\"generate --batch $B\",\"stats\":\"$s\"}"
  done
  "$G" serve --model gpt2 "${Q[@]}" --vocab "$VOCAB" --host 127.0.0.1 --port 0 --threads "$THREADS" \
      --max-batch 16 --ctx-slots 16 --ctx 256 --hugepages >"$LOG" 2>&1 &
  SPID=$!
  for _ in $(seq 1 300); do grep -q "listening on" "$LOG" && break; sleep 0.1; done
  PORT=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$LOG")
  python3 "$(dirname "$0")/serve_load.py" --url "http://127.0.0.1:$PORT" --clients 1,4,16 --requests "$REQS" \
      --max-tokens "$MAXTOK" --prompt "$PROMPT" | sed "s/^{/{\"rep\":$rep,\"what\":\"serve\",/"
  kill -TERM "$SPID"; wait "$SPID" || true; SPID=""
done
