#!/usr/bin/env bash
# The bf16 matmuls' engine (kernels/cpu/bf16_engine.h): fp32 FMAs without
# AVX512_BF16; where the CPU has it, vdpbf16ps or FMAs by a one-core
# measurement kept in gemm.json ("bf16_engine"), which a later process reads
# (edited figures flip the choice both ways); GPT2C_BF16_ENGINE forces it.
# `bench gemm --precision bf16` names the kernel it runs and why, and
# whether its GEMM runs on AMX tiles (GPT2C_BF16_ENGINE=amx without AMX:
# ignored, said; amx-emulated: the C model).
G="$1"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export XDG_CACHE_HOME="$D/cache" GPT2C_PEAK_ARRAY_MIB=16 GPT2C_GEMM_AUTOTUNE=0
run() { "$G" bench gemm --precision bf16 --n 16 --reps 1 --threads 1 --no-blas --no-local-peak > "$D/out.txt" || fail "bench gemm"
        grep 'bf16 kernel' "$D/out.txt"; }
line=$(run)
echo "$line"
case "$("$G" --version)" in *"runs avx512"*) ;; *) echo "not the AVX-512 path here: the engine is not asked"; exit 0 ;; esac
# AMX (the bf16 GEMM's tiles): named on its own line; never where the CPU or OS refuses it
amx=$(grep 'bf16 GEMM (M >= 16)' "$D/out.txt") || fail "no AMX line"
echo "$amx"
# (the other choices through `bench peak`, which names the GEMM's tiles without running a GEMM:
# the C model is slow, the more so under ASan)
peak_amx() { "$G" bench peak --threads 1 | grep 'bf16 gemm'; }
if grep -q 'no AMX' <<< "$amx"; then
  grep -q 'no AMX: .*(GPT2C_BF16_ENGINE=amx ignored)' <<< "$(GPT2C_BF16_ENGINE=amx peak_amx)" ||
    fail "GPT2C_BF16_ENGINE=amx without AMX: $(GPT2C_BF16_ENGINE=amx peak_amx)"
else
  grep -q 'AMX tiles\|AMX not used' <<< "$amx" || fail "AMX: neither used nor refused: $amx"
fi
grep -q 'AMX tiles emulated in C' <<< "$(GPT2C_BF16_ENGINE=amx-emulated peak_amx)" || fail "GPT2C_BF16_ENGINE=amx-emulated"
if ! grep -q ',avx512bf16' "$D/out.txt"; then # the CPU signature in the header
  grep -q 'avx512f-fp32 (fp32 FMAs (no AVX512_BF16 on this CPU))' <<< "$line" || fail "no AVX512_BF16: expected the FMA kernel"
  grep -q 'avx512f-fp32' <<< "$(GPT2C_BF16_ENGINE=vdpbf16ps run)" || fail "GPT2C_BF16_ENGINE=vdpbf16ps on a CPU without it"
  echo "no AVX512_BF16 on this CPU: the measured choice is checked where there is one"
  exit 0
fi
F="$XDG_CACHE_HOME/gpt2c/gemm.json"
grep -q 'measured now' <<< "$line" || fail "first run: the choice was not measured"
grep -q 'avx512bf16 (vdpbf16ps (GPT2C_BF16_ENGINE))' <<< "$(GPT2C_BF16_ENGINE=vdpbf16ps run)" || fail "GPT2C_BF16_ENGINE=vdpbf16ps"
case "$("$G" --version)" in *-jansson*) echo "built without jansson: no cache to test"; exit 0 ;; esac
grep -q '"bf16_engine"' "$F" && grep -q '"vdpbf16ps_gflops"' "$F" && grep -q '"fma_gflops"' "$F" || fail "choice not cached"
grep -q '(cached)' <<< "$(run)" || fail "second run did not read the cached choice"
# the cached figures decide: vdpbf16ps twice the FMAs, then half of them
sed -i 's/"vdpbf16ps_gflops": [0-9.eE+-]*/"vdpbf16ps_gflops": 1000.0/; s/"fma_gflops": [0-9.eE+-]*/"fma_gflops": 500.0/' "$F"
line=$(run)
grep -q 'avx512bf16 (vdpbf16ps: vdpbf16ps 1000.0 ' <<< "$line" || fail "cached: vdpbf16ps faster, not chosen: $line"
sed -i 's/"vdpbf16ps_gflops": 1000.0/"vdpbf16ps_gflops": 250.0/' "$F"
line=$(run)
grep -q 'avx512f-fp32 (fp32 FMAs: vdpbf16ps 250.0 ' <<< "$line" || fail "cached: vdpbf16ps slower, still chosen: $line"
grep -q 'avx512f-fp32 (fp32 FMAs (GPT2C_BF16_ENGINE))' <<< "$(GPT2C_BF16_ENGINE=fma run)" || fail "GPT2C_BF16_ENGINE=fma"
echo "OK"
