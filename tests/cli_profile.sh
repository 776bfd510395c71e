#!/bin/bash
# gpt2c profile: the CLI contract on a tiny model, and bad options.
set -u
G="$1"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
TINY="--model gpt2 --layers 2 --heads 2 --embd 32 --vocab 128 --batch 2 --seq 8"
export GPT2C_PEAK_ARRAY_MIB=8 # the memory probe's array: the contract is tested here, not the figure

"$G" profile $TINY --steps 1 --trials 2 --warmup 1 --threads 1 --no-peak --out "$D/p" > "$D/out.txt" || fail "profile run"
for f in trace.json summary.json ops.csv report.html report.txt top_ops.svg attention_vs_ffn.svg phases.svg roofline.svg scaling.svg; do
    [ -s "$D/p/$f" ] || fail "missing $f"
done
grep -q '"forward"' "$D/p/summary.json" || fail "summary.json: no forward"
grep -q '"backward"' "$D/p/summary.json" || fail "summary.json: no backward"
grep -q '"optimizer"' "$D/p/summary.json" || fail "summary.json: no optimizer"
# the slabs' pages: their bytes, how many of them Linux backs with 2 MiB pages (or null: unknown), THP's mode
grep -Eq '"slab_bytes":[1-9][0-9]*,"huge_page_bytes":([0-9]+|null),"transparent_huge_pages":("(always|madvise|never)"|null)' \
    "$D/p/summary.json" || fail "summary.json: no slab pages"
grep -q 'slabs (weights, gradients, moments) in 2 MiB pages: ' "$D/out.txt" || fail "no slab pages line"
grep -q '"traceEvents"' "$D/p/trace.json" || fail "trace.json: no traceEvents"
grep -q '<svg id="svg-roofline"' "$D/p/report.html" || fail "report.html: no inline roofline"
grep -q '^matmul_qkv,' "$D/p/ops.csv" || fail "ops.csv: no matmul_qkv row"
grep -q 'Top ops' "$D/out.txt" || fail "no top-ops table on the terminal"
grep -q 'Findings' "$D/out.txt" || fail "no findings"
# the in-L2 GEMM probe beside each trial (cpu backend, fp32): a header line, a "% probe" column for the
# matmuls, summary.json / ops.csv fields; and its arithmetic: % probe = 100 x GFLOP/s / probe (one trial; JSON keeps 6 digits)
grep -q '^in-L2 GEMM probe beside each trial: [0-9.]* GFLOP/s' "$D/out.txt" || fail "no probe line"
grep -q '% probe' "$D/out.txt" || fail "no % probe column"
grep -q 'of the in-L2 GEMM probe beside each trial' "$D/out.txt" || fail "no probe finding"
grep -q '"probe_gflops_per_s":{"mean":[0-9]' "$D/p/summary.json" || fail "summary.json: no probe"
grep -q '"pct_of_probe"' "$D/p/summary.json" || fail "summary.json: no pct_of_probe"
head -1 "$D/p/ops.csv" | grep -q ',pct_of_probe,pct_of_mem_probe$' || fail "ops.csv: no pct_of_probe, pct_of_mem_probe columns"
grep -q '^matmul_fc,.*,[0-9.]*[1-9][0-9.]*,[0-9.]*$' "$D/p/ops.csv" || fail "ops.csv: matmul_fc has no % probe"
grep -q '^adamw,.*,,[0-9.]*[1-9][0-9.]*$' "$D/p/ops.csv" || fail "ops.csv: adamw has a % probe, or no % mem probe"
# the memory probe beside each trial (host backends): a header line, a "% mem probe" column, summary.json fields
grep -q '^memory probe beside each trial: [0-9.]* GB/s (min [0-9.]*, max [0-9.]*; the faster of the update stream, [0-9.]*, and the read stream, [0-9.]*, over 8 MiB' \
    "$D/out.txt" || fail "no memory probe line"
grep -q '% mem probe' "$D/out.txt" || fail "no % mem probe column"
grep -q '^Inside the matmuls' "$D/out.txt" || fail "no table of the matmuls' kernel / packing split"
grep -q '^all matmuls ' "$D/out.txt" || fail "the split table has no all-matmuls row"
grep -q 'inside the matmuls (.*in the micro-kernel' "$D/out.txt" || fail "no finding on the matmuls' split"
grep -q '^adamw .* [0-9.]*$' "$D/out.txt" || fail "adamw row has no % mem probe"
grep -q '"mem_probe_gb_per_s":{"mean":[0-9]' "$D/p/summary.json" || fail "summary.json: no mem probe"
grep -q '"mem_probe_read_gb_per_s":{"mean":[0-9]' "$D/p/summary.json" || fail "summary.json: no mem probe read stream"
grep -q '"mem_probe_update_gb_per_s":{"mean":[0-9]' "$D/p/summary.json" || fail "summary.json: no mem probe update stream"
if command -v jq > /dev/null; then
    "$G" profile $TINY --trials 1 --warmup 1 --threads 1 --no-peak --no-counters --quiet --out "$D/p1" || fail "one-trial run"
    jq -e '.ops.matmul_fc as $o | ($o.pct_of_probe.mean - 100 * $o.gflops_per_s.mean / .step.probe_gflops_per_s.mean)
           | fabs < 1e-3 * $o.pct_of_probe.mean' "$D/p1/summary.json" > /dev/null || fail "pct_of_probe != 100 x GFLOP/s / probe"
    # the step's pct_of_probe: all matmuls together, 100 x their FLOPs / their ms / probe
    jq -e '[.ops | to_entries[] | select(.key | startswith("matmul")) | .value] as $m
           | (100 * ($m | map(.flops.mean) | add) / (($m | map(.ms.mean) | add) * 1e6) / .step.probe_gflops_per_s.mean) as $want
           | (.step.pct_of_probe.mean - $want) | fabs < 1e-3 * $want' "$D/p1/summary.json" > /dev/null \
        || fail "step pct_of_probe != all matmuls over the probe"
    # inside the matmuls (the cpu GEMMs' split, 1 thread): shares of the op's thread time, in (0, 100] together,
    # and the kernel's rate = FLOPs / kernel time
    jq -e '.ops.matmul_fc as $o | ($o.pct_in_kernel.mean > 0) and ($o.pct_packing.mean > 0)
           and ($o.pct_in_kernel.mean + $o.pct_packing.mean <= 100.5)
           and (($o.kernel_gflops_per_s.mean - $o.flops.mean / ($o.kernel_thread_ms.mean * 1e6)) | fabs < 1e-3 * $o.kernel_gflops_per_s.mean)' \
        "$D/p1/summary.json" > /dev/null || fail "matmul_fc: the kernel / packing split does not add up"
    # the memory probe: the faster of its two streams; an op's % mem probe = 100 x GB/s / the stream of its
    # pattern: AdamW's the update stream, the grad norm's the read stream
    jq -e '.step | (.mem_probe_gb_per_s.mean - ([.mem_probe_read_gb_per_s.mean, .mem_probe_update_gb_per_s.mean] | max)) | fabs < 1e-6' \
        "$D/p1/summary.json" > /dev/null || fail "mem probe != the faster of its streams"
    jq -e '.ops.adamw as $o | ($o.pct_of_mem_probe.mean - 100 * $o.gb_per_s.mean / .step.mem_probe_update_gb_per_s.mean)
           | fabs < 1e-3 * $o.pct_of_mem_probe.mean' "$D/p1/summary.json" > /dev/null || fail "adamw: pct_of_mem_probe != 100 x GB/s / update stream"
    jq -e '.ops.grad_norm as $o | ($o.pct_of_mem_probe.mean - 100 * $o.gb_per_s.mean / .step.mem_probe_read_gb_per_s.mean)
           | fabs < 1e-3 * $o.pct_of_mem_probe.mean' "$D/p1/summary.json" > /dev/null || fail "grad_norm: pct_of_mem_probe != 100 x GB/s / read stream"
else
    echo "jq not installed: skipping the % probe arithmetic"
fi
# none with --no-probe
"$G" profile $TINY --trials 1 --warmup 0 --threads 1 --no-peak --no-counters --no-probe --out "$D/np" > "$D/np.txt" || fail "--no-probe run"
! grep -q 'GEMM probe\|% probe\|memory probe\|% mem probe' "$D/np.txt" || fail "--no-probe: a probe was reported"
! grep -q 'probe_gflops\|pct_of_probe\|mem_probe' "$D/np/summary.json" || fail "--no-probe: summary.json has a probe"
# bench train / forward --mem-probe: the memory's update stream around each configuration's steps, in GB/s, in a
# last column (one run of the 124M preset: the bench has no smaller model)
"$G" bench forward --model gpt2 --batch 1 --seq 8 --steps 1 --warmup 0 --threads 1 --mem-probe > "$D/bm.txt" || fail "bench --mem-probe"
grep -q 'upd_ms *cpu_ms  mem_GB/s$' "$D/bm.txt" || fail "bench --mem-probe: no mem_GB/s column"
awk '$1 == "cpu" && NF == 15 && $15 ~ /^[0-9]+[.][0-9]$/ && $15 > 0 { ok = 1 } END { exit !ok }' "$D/bm.txt" \
    || fail "bench --mem-probe: the cpu row has no GB/s ($(grep '^ *cpu ' "$D/bm.txt"))"
# beside bf16 matmuls, the bf16 GEMM's own probe (the pair engine's; fma forced keeps the AMX tiles, which have none, off)
GPT2C_BF16_ENGINE=fma "$G" profile $TINY --trials 1 --warmup 0 --threads 1 --no-peak --no-counters --precision bf16 \
    --out "$D/bp" > "$D/bp.txt" || fail "bf16 run"
grep -q "^in-L2 GEMM probe beside each trial: [0-9.]* GFLOP/s.*the bf16 GEMM's micro-kernel" "$D/bp.txt" || fail "bf16: no bf16 probe line"
grep -q '"pct_of_probe"' "$D/bp/summary.json" || fail "bf16: summary.json has no pct_of_probe"

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
