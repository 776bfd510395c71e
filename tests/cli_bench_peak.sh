#!/usr/bin/env bash
# `gpt2c bench peak`: figures labelled (read/scale/triad streams, the memory
# ceiling, the build), and the cache (JSON v6) keyed by CPU signature, threads
# and build: a second run reads it (checking its memory ceiling: one the
# machine now beats is measured again), an entry of another build is not used.
# Also `bench gemm`'s %probe (of the in-L2 GEMM probe) and its dweight form, through its JSON.
G="$1"
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export XDG_CACHE_HOME="$D/cache"
export GPT2C_PEAK_ARRAY_MIB=16 # the cache and labels are tested here, not the figures: keep it quick
"$G" bench peak --threads 1 --runs 1 > "$D/a.txt" || fail "bench peak"
cat "$D/a.txt"
for l in "read bw" "scale bw" "triad bw" "update bw" "memory bw" "build " "fp32 avx512\|fp32 avx2\|fp32 scalar"; do
  grep -q "$l" "$D/a.txt" || fail "no '$l' line"
done
# the memory ceiling is the best of the three streams
awk '/^(read|scale|triad|update) bw/ {if ($3 > m) m = $3} /^memory bw/ {c = $3} END {exit !(c == m && c > 0)}' "$D/a.txt" \
  || fail "memory bw is not the best of read/scale/triad/update"
# bench gemm's local figures: fp32 rows carry the in-L2 probe beside the peak bursts, never above 100%
# (one row per GEMM, N=1: ~10 s under ASan, where the bursts and probes cost the most)
GPT2C_GEMM_AUTOTUNE=0 "$G" bench gemm --n 1 --reps 1 --threads 1 --no-blas --json > "$D/g.json" || fail "bench gemm --json"
grep -q '"cpu_pct_probe"' "$D/g.json" || fail "bench gemm: no in-L2 probe figure"
grep -o '"cpu_pct_probe":[0-9.]*' "$D/g.json" | awk -F: '$2 > 100 || $2 <= 0 {bad = 1} END {exit bad}' \
  || fail "bench gemm: a probe figure outside (0, 100]"
# dweight as training writes it (dW overwritten) unless --dw-accumulate; said in the JSON
grep -q '"dweight_accumulates":false' "$D/g.json" || fail "bench gemm: dweight does not say it overwrites by default"
GPT2C_GEMM_AUTOTUNE=0 "$G" bench gemm --n 1 --reps 1 --threads 1 --no-blas --no-local-peak --dw-accumulate --json > "$D/ga.json" \
  || fail "bench gemm --dw-accumulate"
grep -q '"dweight_accumulates":true' "$D/ga.json" || fail "bench gemm --dw-accumulate: not said in the JSON"
GPT2C_GEMM_AUTOTUNE=0 "$G" bench gemm --n 1 --reps 1 --threads 1 --no-blas --no-local-peak --dw-accumulate --precision bf16 --json \
  > "$D/gb.json" || fail "bench gemm --precision bf16 --dw-accumulate"
grep -q '"dweight_accumulates":true' "$D/gb.json" || fail "bench gemm --precision bf16 --dw-accumulate: not said in the JSON"
case "$("$G" --version)" in *-jansson*) echo "built without jansson: no cache to test"; exit 0 ;; esac
F="$XDG_CACHE_HOME/gpt2c/peak.json"
grep -q "measured, cached" "$D/a.txt" || fail "first run not cached"
grep -q '"version": 6' "$F" || fail "cache version"
for k in '"build"' '"read"' '"scale"' '"triad"' '"update"' '"bandwidth_threads"' '"signature"'; do grep -q "$k" "$F" || fail "cache lacks $k"; done
"$G" bench peak --threads 1 --runs 1 > "$D/b.txt" || fail "second run"
grep -q "^source     cache" "$D/b.txt" || fail "second run did not read the cache"
grep -q "^bw check" "$D/b.txt" || fail "a cached ceiling read without the bandwidth check"
# a cached memory ceiling below what the machine does now (measured at a slower
# moment) is measured again, and the cache rewritten with the faster figures
sed -i 's/"update": [0-9.eE+-]*/"update": 0.001/; s/"read": [0-9.eE+-]*/"read": 0.001/' "$F"
"$G" bench peak --threads 1 --runs 1 > "$D/s.txt" || fail "stale ceiling"
grep -q "^bw check.*measured again" "$D/s.txt" || fail "a stale bandwidth ceiling was kept"
awk '/^(update|read) bw/ {if ($3 <= 0.01) bad = 1} END {exit bad}' "$D/s.txt" || fail "stale bandwidths still reported"
grep -q '"update": 0.001' "$F" && fail "the cache kept the stale update figure"
# a ceiling the check does not beat stands (it only rises)
sed -i 's/"update": [0-9.eE+-]*/"update": 1000000.0/' "$F"
"$G" bench peak --threads 1 --runs 1 > "$D/h.txt" || fail "high ceiling"
grep -q "^bw check.*ceiling stands" "$D/h.txt" || fail "a cached ceiling above the check was measured again"
grep -q "^update bw *1000000.0" "$D/h.txt" || fail "the cached update ceiling was not kept"
# --remeasure measures again but keeps a cached bandwidth the new one falls short of; --reset replaces it
"$G" bench peak --threads 1 --runs 1 --remeasure > "$D/r.txt" || fail "--remeasure"
grep -q "^source     measured" "$D/r.txt" || fail "--remeasure read the cache instead of measuring"
grep -q "^bw kept *[1-4] of the 4 bandwidths" "$D/r.txt" || fail "--remeasure: the kept cached ceiling not said"
grep -q "^update bw *1000000.0" "$D/r.txt" || fail "--remeasure lowered the cached update ceiling"
grep -q '"update": 1000000.0' "$F" || fail "--remeasure: the cache lost the higher update figure"
"$G" bench peak --threads 1 --runs 1 --reset > "$D/x.txt" || fail "--reset"
grep -q "^bw kept" "$D/x.txt" && fail "--reset kept a cached figure"
grep -q '"update": 1000000.0' "$F" && fail "--reset left the higher update figure in the cache"
GPT2C_PEAK_NO_RECHECK=1 "$G" bench peak --threads 1 --runs 1 > "$D/n.txt" || fail "no recheck"
grep -q "^bw check" "$D/n.txt" && fail "GPT2C_PEAK_NO_RECHECK=1 still checked"
# an entry from another build (say an ASan one) must not be used
sed -i 's/"build": "[^"]*"/"build": "OtherBuild+asan"/' "$F"
"$G" bench peak --threads 1 --runs 1 > "$D/c.txt" || fail "third run"
grep -q "measured, cached" "$D/c.txt" || fail "an entry of another build was used"
[ "$(grep -c '"build"' "$F")" = 2 ] || fail "entries of two builds expected in the cache"
# a cache of the previous version (no AMX peak) is re-measured, not read
sed -i 's/"version": 6/"version": 5/' "$F"
"$G" bench peak --threads 1 --runs 1 > "$D/v.txt" || fail "old-version cache"
grep -q "measured, cached" "$D/v.txt" || fail "a version-5 cache was read"
grep -q '"version": 6' "$F" || fail "old-version cache not replaced"
# a corrupt cache is replaced, not fatal
echo '{"version": 6, "entries": [' > "$F"
"$G" bench peak --threads 1 --runs 1 > "$D/d.txt" || fail "corrupt cache"
grep -q "measured, cached" "$D/d.txt" || fail "corrupt cache not replaced"
echo "OK"
