#!/bin/bash
# gpt2c profile: the CLI contract on a tiny model, and bad options.
set -u
G="$1"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
TINY="--model gpt2 --layers 2 --heads 2 --embd 32 --vocab 128 --batch 2 --seq 8"

"$G" profile $TINY --steps 1 --trials 2 --warmup 1 --threads 1 --no-peak --out "$D/p" > "$D/out.txt" || fail "profile run"
for f in trace.json summary.json ops.csv report.html report.txt top_ops.svg attention_vs_ffn.svg phases.svg roofline.svg scaling.svg; do
    [ -s "$D/p/$f" ] || fail "missing $f"
done
grep -q '"forward"' "$D/p/summary.json" || fail "summary.json: no forward"
grep -q '"backward"' "$D/p/summary.json" || fail "summary.json: no backward"
grep -q '"optimizer"' "$D/p/summary.json" || fail "summary.json: no optimizer"
grep -q '"traceEvents"' "$D/p/trace.json" || fail "trace.json: no traceEvents"
grep -q '<svg id="svg-roofline"' "$D/p/report.html" || fail "report.html: no inline roofline"
grep -q '^matmul_qkv,' "$D/p/ops.csv" || fail "ops.csv: no matmul_qkv row"
grep -q 'Top ops' "$D/out.txt" || fail "no top-ops table on the terminal"
grep -q 'Findings' "$D/out.txt" || fail "no findings"
# hardware counters: either on, or said unavailable exactly once
n=$(grep -c 'hardware counters unavailable' "$D/out.txt")
if [ "$n" != 0 ] && [ "$n" != 1 ]; then fail "unavailable said $n times"; fi

# a thread sweep gives the scaling table
"$G" profile $TINY --trials 1 --warmup 0 --threads 1,2 --no-peak --no-counters --quiet --out "$D/s" || fail "sweep"
grep -q '"scaling":\[' "$D/s/summary.json" && grep -q '"threads":2' "$D/s/summary.json" || fail "no scaling rows"

# a checkpoint path profiles that model (safetensors: needs jansson)
if "$G" --version | grep -q -- "-jansson"; then
    echo "built without jansson: skipping the checkpoint case"
elif [ -n "${GPT2C_FIXTURES:-}" ] && [ -f "$GPT2C_FIXTURES/ref_tiny/model.safetensors" ]; then
    "$G" profile --model "$GPT2C_FIXTURES/ref_tiny/model.safetensors" --batch 2 --seq 8 --trials 1 --warmup 0 \
        --threads 1 --no-peak --no-counters --quiet --out "$D/ck" || fail "profile a checkpoint"
    grep -q 'ref_tiny' "$D/ck/summary.json" || fail "summary.json does not name the checkpoint"
fi

# bad options: usage errors (2) or clear failures (1), never a crash
expect() { want=$1; shift; "$G" profile "$@" > /dev/null 2> "$D/err"; rc=$?
    [ $rc = "$want" ] || fail "profile $*: exit $rc, want $want ($(cat "$D/err"))"
    [ -s "$D/err" ] || fail "profile $*: no message"; }
expect 2 $TINY --batch 0
expect 2 $TINY --trials 0
expect 2 $TINY --threads x
expect 2 $TINY --backend nosuch
expect 2 $TINY --bogus
expect 1 --model nosuchmodel
expect 1 --model /no/such/checkpoint.bin
expect 1 $TINY --seq 5000
expect 1 $TINY --trials 1 --no-peak --out /proc/nope/x
echo "cli_profile: ok"
