#!/usr/bin/env bash
# Hugging Face model directories through the CLI: --model DIR for eval / info /
# generate, convert IN DIR/ (with the tokenizer), train --save DIR/ and
# --resume DIR, and bad directories as one-line errors.
# Usage: cli_hf_dir.sh <path-to-gpt2c>
set -u
G=$1
case "$("$G" --version)" in
  *-jansson*) echo "SKIP: built without jansson"; exit 77 ;;
  *-utf8proc*) echo "SKIP: built without utf8proc"; exit 77 ;;
esac
FX=${GPT2C_FIXTURES:?}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
fails=0
pass() { echo "ok: $1"; }
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }
run_ok() { local name=$1; shift; if "$@" >"$W/out" 2>"$W/err"; then pass "$name"; else fail "$name: $(cat "$W/err")"; fi; }
expect_error() {
  local name=$1 pat=$2; shift 2
  "$@" >"$W/out" 2>"$W/err"; local rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then fail "$name: exit $rc"; return; fi
  if [ "$(wc -l <"$W/err")" -ne 1 ]; then fail "$name: expected one line on stderr: $(cat "$W/err")"; return; fi
  if ! grep -q -- "$pat" "$W/err"; then fail "$name: message lacks '$pat': $(cat "$W/err")"; return; fi
  pass "$name: $(cat "$W/err")"
}

# a corpus and tokenizer of 320 ids; the model gets that vocabulary
for i in $(seq 1 400); do echo "the quick brown fox number $i jumps over the lazy dog."; echo; done >"$W/text.txt"
$G bpe-train --in "$W/text.txt" --vocab-size 320 --out "$W/vocab" >/dev/null 2>&1 || { echo "bpe-train failed"; exit 1; }
$G tokenize --vocab "$W/vocab" --in "$W/text.txt" --out "$W/shards" --name t --val-tokens 1024 >/dev/null 2>&1 || { echo "tokenize failed"; exit 1; }
SIZES=(--layers 1 --heads 2 --embd 16 --ctx 16 --vocab "$W/vocab")

# train --save DIR/: a directory with config, weights, generation config and the tokenizer
run_ok "train --save DIR/" $G train --model gpt2 "${SIZES[@]}" --data "$W/shards/t_train_*.bin" --batch 2 --seq 16 \
  --steps 3 --save "$W/run/"
for f in config.json generation_config.json model.safetensors vocab.json merges.txt; do
  [ -f "$W/run/$f" ] || fail "train --save DIR/ wrote no $f"
done
grep -q '"eos_token_id": 319' "$W/run/config.json" || fail "config.json: eos_token_id is not the tokenizer's <|endoftext|> (319)"
run_ok "eval --model DIR" $G eval --model "$W/run" --data "$W/shards/t_val_*.bin" --batch 2 --seq 16
grep -q "loss" "$W/out" || fail "eval printed no loss"
run_ok "info DIR" $G info "$W/run"
grep -q "layers 1, heads 2" "$W/out" || fail "info DIR: no config line"
run_ok "train --resume DIR" $G train --resume "$W/run" --data "$W/shards/t_train_*.bin" --batch 2 --seq 16 --steps 4
run_ok "generate --model DIR (tokenizer from DIR)" $G generate --model "$W/run" --prompt "the quick" --max-tokens 4 --seed 1
# size options may restate the directory's sizes but not change them
expect_error "eval --model DIR --embd 32" "contradict the checkpoint (it has layers=1 heads=2 embd=16" $G eval --model "$W/run" --embd 32 --data "$W/shards/t_val_*.bin"

# convert: file -> DIR/, DIR -> file, DIR -> DIR/ (the tokenizer goes along)
run_ok "convert DIR DIR2/" $G convert "$W/run" "$W/copy/"
[ -f "$W/copy/vocab.json" ] || fail "convert DIR DIR2/: tokenizer not copied"
run_ok "convert DIR x.bin" $G convert "$W/run" "$W/x.bin"
run_ok "convert x.bin DIR3/" $G convert "$W/x.bin" "$W/fromfile/"
run_ok "convert fixture dir (sharded) -> DIR/" $G convert "$FX/hf_dir_sharded" "$W/unsharded/"
cmp -s "$FX/hf_dir_sharded/config.json" "$W/unsharded/config.json" && fail "config.json copied verbatim?"
run_ok "info unsharded" $G info "$W/unsharded"
expect_error "convert --vocab to a file" "directory output" $G convert "$W/run" "$W/y.safetensors" --vocab "$W/vocab"

# bad directories
mkdir -p "$W/empty"
expect_error "empty directory" "no model.safetensors" $G eval --model "$W/empty" --data "$W/shards/t_val_*.bin"
cp -r "$W/run" "$W/bad"
sed -i 's/"n_embd": 16/"n_embd": 32/' "$W/bad/config.json"
expect_error "config.json n_embd vs tensors" "n_embd 32 disagrees with tensor 'transformer.wte.weight' of shape \[320, 16\]" \
  $G info "$W/bad"
sed -i 's/"n_embd": 32/"n_embd": 16/; s/"n_head": 2/"n_head": "2"/' "$W/bad/config.json"
expect_error "config.json n_head as a string" "n_head must be an integer, got a string" $G eval --model "$W/bad" --data "$W/shards/t_val_*.bin"
sed -i 's/"n_head": "2"/"n_head": 2/; s/"gelu_new"/"gelu"/' "$W/bad/config.json"
expect_error "config.json activation gelu" "activation_function 'gelu'" $G generate --model "$W/bad" --prompt x --max-tokens 1

if [ $fails -ne 0 ]; then echo "cli_hf_dir: $fails failures"; exit 1; fi
echo "cli_hf_dir: all passed"
