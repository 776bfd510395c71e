#!/usr/bin/env bash
# gpt2c pipeline on the tiny teacher of tests/fixtures/distill: every stage
# gets a row (measured, or pending with the reason), the three outputs are
# written, and bad input is a one-line error with nothing written.
set -u
G="$1"
"$G" --version | grep -q -- "+jansson" || { echo "SKIP: safetensors needs jansson"; exit 77; }
F="${GPT2C_FIXTURES:?}/distill"
. "$(dirname "$0")/lib/cli.sh"
token_shard "$W/train.bin" 2048 97 37 5
token_shard "$W/val.bin" 1024 97 53 5
P=(pipeline --teacher "$F/teacher.safetensors" --data "$W/train.bin" --val-data "$W/val.bin" --seq 12 --batch 2
   --distill-steps 3 --student-layers 1 --student-heads 2 --student-embd 64 --trials 2 --threads 1)

if "$G" "${P[@]}" --out "$W/run" >"$W/table.md" 2>"$W/run.err"; then pass "pipeline runs"; else fail "pipeline runs"; cat "$W/run.err"; fi
for f in pipeline.md pipeline.json report.html; do [ -s "$W/run/$f" ] && pass "wrote $f" || fail "no $f"; done
[ "$(grep -c "^| " "$W/run/pipeline.md")" -eq 7 ] && pass "markdown: header and 6 stage rows" || fail "markdown rows"
grep -q '^| baseline (teacher) | [0-9.]* | [0-9.]* | [0-9.e+]* ± ' "$W/run/pipeline.md" && pass "baseline measured (mean ± std)" \
  || fail "baseline row: $(grep baseline "$W/run/pipeline.md")"
grep -q '^| + distillation | [0-9.]* |' "$W/run/pipeline.md" && pass "distilled student measured" || fail "distillation row"
grep -q '^| + NF4 weights | \(unavailable\|[0-9.]*\) | [0-9.]* |' "$W/run/pipeline.md" && pass "NF4 measured" \
  || fail "NF4 row: $(grep NF4 "$W/run/pipeline.md")"
cmp -s "$W/table.md" "$W/run/pipeline.md" && pass "the table on stdout is pipeline.md" || fail "stdout differs from pipeline.md"
[ "$(grep -o '"name":' "$W/run/pipeline.json" | wc -l)" -eq 6 ] && pass "JSON: 6 stages" || fail "JSON stages"
grep -q '"trials":\[[0-9.e+-]*,[0-9.e+-]*\]' "$W/run/pipeline.json" && pass "JSON: both trials kept" || fail "JSON trials"
[ "$(grep -c '<svg id="chart_' "$W/run/report.html")" -eq 7 ] && pass "HTML: 7 charts" || fail "HTML charts"
grep -q '^| + LoRA (rank 8) | [0-9.]* |' "$W/run/pipeline.md" && pass "LoRA measured" || fail "LoRA row: $(grep LoRA "$W/run/pipeline.md")"
# the pruned adapters: 80% of the adapter weights zero, saved, and the row measured
grep -q '^| + prune adapters 80% | [^|]* | [0-9.]* |' "$W/run/pipeline.md" && pass "adapter pruning measured" \
  || fail "prune row: $(grep prune "$W/run/pipeline.md")"
grep -q '"note":"[0-9]* of [0-9]* adapter weights zero (8[0-9.]*%)' "$W/run/pipeline.json" && pass "80% of the adapter weights zero" \
  || fail "prune note: $(grep -o '"note":"[^"]*adapter weights[^"]*"' "$W/run/pipeline.json")"
[ -s "$W/run/adapter_pruned/adapter_model.safetensors" ] && pass "pruned adapter saved" || fail "no adapter_pruned"

# bad input: one line, non-zero exit, nothing written
mkdir "$W/keep"; echo keep > "$W/keep/pipeline.md"
expect_error "no --out" "\-\-out is required" "$G" pipeline --data "$W/train.bin" --val-data "$W/val.bin"
expect_error "no --val-data" "\-\-val-data is required" "$G" pipeline --data "$W/train.bin" --out "$W/keep"
expect_error "--trials 0" "\-\-trials" "$G" "${P[@]}" --out "$W/keep" --trials 0
expect_error "--alpha 2" "\-\-alpha" "$G" "${P[@]}" --out "$W/keep" --alpha 2
expect_error "--temperature 0" "\-\-temperature" "$G" "${P[@]}" --out "$W/keep" --temperature 0
expect_error "teacher missing" "\-\-teacher" "$G" "${P[@]}" --out "$W/keep" --teacher "$W/nope.safetensors"
expect_error "--seq longer than the teacher's context" "context" "$G" "${P[@]}" --out "$W/keep" --seq 40
expect_error "--out is a file" "\-\-out" "$G" "${P[@]}" --out "$W/train.bin"
[ "$(cat "$W/keep/pipeline.md")" = keep ] && [ ! -e "$W/keep/report.html" ] && pass "nothing written on bad input" \
  || fail "bad input wrote into --out"

[ $fails -eq 0 ] && echo "cli_pipeline: all passed" || echo "cli_pipeline: $fails failed"
exit $((fails > 0))
