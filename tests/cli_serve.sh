#!/usr/bin/env bash
# gpt2c serve end to end with curl, on a free loopback port (127.0.0.1 only):
# the answer equals `gpt2c generate`, streaming equals the whole answer,
# /health /v1/models /metrics, bad options get a one-line error, SIGTERM
# drains (the stream in flight ends with [DONE]) and exits 0.
set -u
G=$1
case "$("$G" --version)" in
  *-serve*)
    err=$("$G" serve --model gpt2 2>&1 >/dev/null); rc=$?
    if [ $rc -eq 1 ] && echo "$err" | grep -q "no HTTP support"; then echo "ok (built without libmicrohttpd): $err"; exit 0; fi
    echo "FAIL: without HTTP support: rc=$rc $err"; exit 1 ;;
  *-utf8proc*) echo "SKIP: built without utf8proc"; exit 77 ;;
esac
for t in curl jq; do command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }; done
W=$(mktemp -d)
SPID=""
cleanup() { [ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
fails=0
pass() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
# one stderr line matching a pattern, exit 1 or 2
expect_error() {
  local name=$1 pat=$2; shift 2
  "$@" >"$W/out" 2>"$W/err"; local rc=$?
  if [ $rc -ne 1 ] && [ $rc -ne 2 ]; then fail "$name: exit $rc"; cat "$W/err"; return; fi
  if [ "$(wc -l <"$W/err")" -ne 1 ] || ! grep -q -- "$pat" "$W/err"; then fail "$name: $(cat "$W/err")"; return; fi
  pass "$name: $(cat "$W/err")"
}

# a tiny model trained a few steps on a corpus made here, with its own vocabulary
for i in $(seq 1 400); do echo "the quick brown fox number $i jumps over the lazy dog."; done >"$W/text.txt"
"$G" bpe-train --in "$W/text.txt" --vocab-size 300 --out "$W/vocab" >/dev/null 2>&1 || { echo "FAIL: bpe-train"; exit 1; }
"$G" tokenize --vocab "$W/vocab" --in "$W/text.txt" --out "$W/shards" --name t --val-tokens 1024 >/dev/null 2>&1 || { echo "FAIL: tokenize"; exit 1; }
"$G" train --model gpt2 --layers 2 --heads 2 --embd 32 --ctx 64 --vocab "$W/vocab" --data "$W/shards/t_train_*.bin" \
  --batch 2 --seq 32 --steps 4 --threads 2 --save "$W/m.safetensors" --log /dev/null >/dev/null 2>&1 || { echo "FAIL: train"; exit 1; }
M=(--model "$W/m.safetensors" --vocab "$W/vocab" --threads 2)

start_server() { # --port 0: the kernel picks a free port, the server prints it
  rm -f "$W/serve.out" "$W/serve.err" # (not an earlier server's port)
  "$G" serve "${M[@]}" --host 127.0.0.1 --port 0 "$@" >"$W/serve.out" 2>"$W/serve.err" &
  SPID=$!
  PORT=""
  for _ in $(seq 1 100); do # at most ~10 s
    PORT=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$W/serve.out")
    [ -n "$PORT" ] && break
    kill -0 "$SPID" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$PORT" ] || { echo "FAIL: the server did not start: $(cat "$W/serve.err")"; exit 1; }
  URL="http://127.0.0.1:$PORT"
}
start_server --max-batch 4 --ctx-slots 4 --name tiny
C=(curl -s --max-time 60)

[ "$("${C[@]}" "$URL/health" | jq -r .status)" = ok ] && pass "/health" || fail "/health"
[ "$("${C[@]}" "$URL/v1/models" | jq -r '.data[0].id')" = tiny ] && pass "/v1/models" || fail "/v1/models"

# the same answer as gpt2c generate (greedy and seeded sampling); compared on
# the ASCII bytes, as a server repairs UTF-8 that a terminal gets raw
for args in "0 0 1 1" "0.9 20 0.9 42"; do
  set -- $args
  body=$(jq -nc --argjson t "$1" --argjson k "$2" --argjson p "$3" --argjson s "$4" \
    '{prompt: "the quick brown", max_tokens: 20, temperature: $t, top_k: $k, top_p: $p, seed: $s}')
  whole=$("${C[@]}" "$URL/v1/completions" -d "$body")
  text=$(printf '%s' "$whole" | jq -j '.choices[0].text')
  gen=$("$G" generate "${M[@]}" --prompt "the quick brown" --max-tokens 20 --temperature "$1" --top-k "$2" --top-p "$3" --seed "$4")
  a=$(printf '%s' "$text" | LC_ALL=C tr -d '\200-\377'); b=$(printf '%s' "$gen" | LC_ALL=C tr -d '\200-\377')
  [ -n "$a" ] && [ "$a" = "$b" ] && pass "= gpt2c generate (temperature $1): '$a'" || fail "server '$a' vs generate '$b'"
  sbody=$(printf '%s' "$body" | jq -c '. + {stream: true}')
  streamed=$("${C[@]}" -N "$URL/v1/completions" -d "$sbody")
  joined=$(printf '%s\n' "$streamed" | sed -n 's/^data: \({.*\)/\1/p' | jq -j '.choices[0].text')
  [ "$joined" = "$text" ] && pass "streaming = whole answer" || fail "streamed '$joined' vs '$text'"
  printf '%s\n' "$streamed" | grep -q '^data: \[DONE\]' && pass "stream ends with [DONE]" || fail "no [DONE]"
done

r=$("${C[@]}" -w ' %{http_code}' "$URL/v1/completions" -d '{"prompt":"the","temperature":"hot"}')
case "$r" in *'"param":"temperature"'*' 400') pass "bad field -> 400 naming it" ;; *) fail "bad field: $r" ;; esac
"${C[@]}" "$URL/metrics" | grep -q '^gpt2c_generated_tokens_total [1-9]' && pass "/metrics counts tokens" || fail "/metrics"

# SIGTERM while a stream runs: it finishes ([DONE]), the server exits 0, then nothing listens
"${C[@]}" -N "$URL/v1/completions" -d '{"prompt":"the","max_tokens":40,"stream":true,"seed":3}' >"$W/stream.txt" &
CPID=$!
for _ in $(seq 1 100); do grep -q '^data: {' "$W/stream.txt" && break; sleep 0.1; done
kill -TERM "$SPID"
wait "$CPID"
wait "$SPID"; rc=$?
SPID=""
[ $rc -eq 0 ] && pass "SIGTERM: exit 0" || fail "SIGTERM: exit $rc"
grep -q '^data: \[DONE\]' "$W/stream.txt" && pass "SIGTERM: the stream in flight finished" || fail "SIGTERM: stream cut: $(tail -c 200 "$W/stream.txt")"
grep -q draining "$W/serve.err" && pass "SIGTERM: drained" || fail "no drain message"
curl -s --max-time 5 "$URL/health" >/dev/null && fail "still answering after SIGTERM" || pass "nothing listens after SIGTERM"

# quantized weights: the same answer as gpt2c generate --quant q8
start_server --quant q8
body='{"prompt": "the quick brown", "max_tokens": 12, "temperature": 0}'
a=$("${C[@]}" "$URL/v1/completions" -d "$body" | jq -j '.choices[0].text' | LC_ALL=C tr -d '\200-\377')
b=$("$G" generate "${M[@]}" --quant q8 --prompt "the quick brown" --max-tokens 12 --temperature 0 | LC_ALL=C tr -d '\200-\377')
[ -n "$a" ] && [ "$a" = "$b" ] && pass "--quant q8 = gpt2c generate --quant q8: '$a'" || fail "q8: server '$a' vs generate '$b'"
kill -TERM "$SPID"; wait "$SPID"; SPID=""

# bf16 weights: the same answer as gpt2c generate --precision bf16
start_server --precision bf16
body='{"prompt": "the quick brown", "max_tokens": 12, "temperature": 0}'
a=$("${C[@]}" "$URL/v1/completions" -d "$body" | jq -j '.choices[0].text' | LC_ALL=C tr -d '\200-\377')
b=$("$G" generate "${M[@]}" --precision bf16 --prompt "the quick brown" --max-tokens 12 --temperature 0 | LC_ALL=C tr -d '\200-\377')
[ -n "$a" ] && [ "$a" = "$b" ] && pass "--precision bf16 = gpt2c generate --precision bf16: '$a'" || fail "bf16: server '$a' vs generate '$b'"
kill -TERM "$SPID"; wait "$SPID"; SPID=""

# bad options: one line each
expect_error "--quant unknown" "--quant" "$G" serve "${M[@]}" --port 0 --quant q5
expect_error "--precision outside the list" "--precision 'fp16'" "$G" serve "${M[@]}" --port 0 --precision fp16
expect_error "--adapter: a directory without an adapter" "adapter_config.json" "$G" serve "${M[@]}" --port 0 --adapter "$W"
expect_error "--host not numeric" "--host" "$G" serve "${M[@]}" --host example.org --port 0
expect_error "--port out of range" "--port" "$G" serve "${M[@]}" --port 70000
expect_error "--ctx beyond the model" "--ctx" "$G" serve "${M[@]}" --port 0 --ctx 4096
expect_error "no --model" "--model" "$G" serve --vocab "$W/vocab" --port 0
start_server
expect_error "port in use" "--port" "$G" serve "${M[@]}" --host 127.0.0.1 --port "$PORT"
kill -TERM "$SPID"; wait "$SPID"; SPID=""
exit $((fails > 0))
