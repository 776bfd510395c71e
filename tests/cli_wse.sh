#!/usr/bin/env bash
# gpt2c wse run / sweep: the report has its fields, SVG heatmaps and a trace;
# every parameter is printed with a source label; bad options get a one-line error.
set -u
G="$1"
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
bad() {
    local name="$1"; shift
    local err; err=$("$G" wse "$@" 2>&1 >/dev/null); local rc=$?
    if [ $rc -ne 0 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] && [ -n "$err" ]; then
        echo "ok: $name -> $err"
    else
        echo "FAIL: $name (rc=$rc): $err"; fail=1
    fi
}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
M="--model gpt2 --layers 2 --embd 64 --heads 4 --vocab 512 --ctx 64"
out=$("$G" wse run $M --mesh 32x16 --strategy b --seq 8 --decode 4 --values f32 --out "$T/r") || fail=1
check "f32 run matches ref" 'printf "%s" "$out" | grep -q "max_rel_err_vs_ref" && printf "%s" "$out" | grep -q "decode tokens match"'
check "every parameter has a source label" '[ "$(printf "%s\n" "$out" | grep -cE "^  [a-z_0-9]+ +[0-9.e+-]+ +\[(doc|code|3p|est|paper)")" -eq 21 ]'
for k in '"cycles"' '"seconds"' '"max_rel_err_vs_ref"' '"ops"' '"layers"' '"compute_cycles"' '"comm_cycles"' \
         '"idle_fraction"' '"flops_per_s"' '"peak_flops_mesh"' '"sram_bytes_per_pe"' '"colors_per_pe"' \
         '"link_utilisation"' '"parameters"' '"source"'; do
    check "report.json has $k" "grep -q '$k' '$T/r/report.json'"
done
check "report.html has three SVG heatmaps" '[ "$(grep -o "<svg" "$T/r/report.html" | wc -l)" -eq 3 ]'
check "trace.json has PE tracks and spans" 'grep -q "thread_name" "$T/r/trace.json" && grep -q "\"ph\":\"X\"" "$T/r/trace.json"'
"$G" wse run $M --mesh 16x16 --seq 8 --values none --quiet --out "$T/n" >/dev/null || fail=1
check "none mode: max_rel_err_vs_ref is null" 'grep -q "\"max_rel_err_vs_ref\": null" "$T/n/report.json"'
a=$("$G" wse run $M --mesh 16x16 --seq 8 --decode 3 --values none --quiet | grep -o "^strategy.*cycles (prefill [0-9]*)")
b=$("$G" wse run $M --mesh 16x16 --seq 8 --decode 3 --values none --quiet | grep -o "^strategy.*cycles (prefill [0-9]*)")
check "deterministic: same cycles twice" '[ -n "$a" ] && [ "$a" = "$b" ]'
s=$("$G" wse sweep $M --mesh 32x16 --seq 8 --decode 2 --out "$T") || fail=1
check "sweep covers 8 settings" '[ "$(grep -c "" "$T/sweep.csv")" -eq 17 ] && printf "%s" "$s" | grep -q "of 8 settings"'
bad "a malformed mesh" run $M --mesh 32by16
bad "an unknown strategy" run $M --strategy z
bad "wavelet fidelity on a big mesh" run $M --fidelity wavelet
bad "prompt beyond the context" run $M --mesh 16x16 --seq 60 --decode 10
bad "an unknown parameter" run $M --mesh 16x16 --set warp=9
bad "a grid that splits no head" run $M --mesh 16x16 --grid 3
bad "regions that do not fit" run $M --mesh 16x16 --strategy b --grid 16
bad "SRAM over budget" run $M --mesh 2x2 --set reserve=45000
bad "an unknown subcommand" frobnicate
exit $fail
