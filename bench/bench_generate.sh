#!/usr/bin/env bash
# Prefill and decode tok/s of `gpt2c bench generate` (random weights; speed
# does not depend on the values), one JSON line per configuration.
# Usage: bench/bench_generate.sh [BUILD_DIR] [THREADS]
set -eu
B="${1:-build}/gpt2c"
T="${2:-2}"
# --hugepages: weights in 2 MiB pages first (the steady state of a long-running server)
run() { echo "# $*" >&2; "$B" bench generate --threads "$T" --hugepages --json "$@"; }
# prefill at P=512 (llama.cpp pp512), decode right after it
run --model gpt2 --prompt-len 512 --tokens 64 --runs 5
# decode from a short prompt (llama.cpp tg64: 64 tokens from an empty context)
run --model gpt2 --prompt-len 1 --tokens 64 --runs 5
# several sequences per step: weights streamed once for all of them
run --model gpt2 --prompt-len 1 --tokens 64 --runs 3 --batch 4
run --model gpt2-medium --prompt-len 512 --tokens 32 --runs 3
run --model gpt2-medium --prompt-len 1 --tokens 32 --runs 3
run --model gpt2-large --prompt-len 512 --tokens 16 --runs 3
run --model gpt2-large --prompt-len 1 --tokens 16 --runs 3
