#!/usr/bin/env bash
# Bad input for encode / decode / tokenize / bpe-train: a one-line error naming
# the file or input at fault, a non-zero exit, and no shards left behind.
set -u
G=$1
# the tokenizer reads vocab.json (jansson) and classifies with utf8proc
case "$("$G" --version)" in
    *-jansson*) echo "SKIP: built without jansson"; exit 77 ;;
    *-utf8proc*) echo "SKIP: built without utf8proc"; exit 77 ;;
esac
T=$(mktemp -d)
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
fail=0
# expect_fail NAME PATTERN CMD...: fails, stderr is one line matching PATTERN
expect_fail() {
    local name=$1 pat=$2
    shift 2
    "$@" > "$T/out" 2> "$T/err.all"
    local rc=$?
    grep -v '^tokenize: ' "$T/err.all" > "$T/err" # progress lines are not errors
    local lines
    lines=$(wc -l < "$T/err")
    if [ $rc = 0 ] || [ "$lines" != 1 ] || ! grep -q -- "$pat" "$T/err"; then
        echo "FAIL: $name (rc=$rc, $lines lines):"
        cat "$T/err"
        fail=1
    else
        echo "ok: $name: $(cat "$T/err")"
    fi
}

printf 'the cat sat on the mat.\n\nthe dog ate the cat food.\n' > "$T/c.txt"
"$G" bpe-train --in "$T/c.txt" --vocab-size 280 --out "$T/v" > /dev/null || { echo "FAIL: bpe-train"; exit 1; }
V="$T/v"
mkdir -p "$T/bad"
bad_vocab() { # $1 = vocab.json text, $2 = merges text
    printf '%s' "$1" > "$T/bad/vocab.json"
    printf '%s' "$2" > "$T/bad/merges.txt"
}

expect_fail "missing vocab dir" "/nonexistent" "$G" encode --vocab /nonexistent < /dev/null
expect_fail "vocab dir without files" "no encoder.json" "$G" encode --vocab "$T" < /dev/null
head -c 500 "$V/vocab.json" > "$T/bad/vocab.json"; cp "$V/merges.txt" "$T/bad/"
expect_fail "truncated JSON" "vocab.json.*invalid JSON" "$G" encode --vocab "$T/bad" < /dev/null
bad_vocab '[1,2]' ''
expect_fail "non-object JSON" "vocab.json: not a JSON object" "$G" encode --vocab "$T/bad" < /dev/null
sed 's/"<|endoftext|>": [0-9]*/"<|endoftext|>": 99999/' "$V/vocab.json" > "$T/bad/vocab.json"; cp "$V/merges.txt" "$T/bad/"
expect_fail "id out of range" "vocab.json.*out of range" "$G" encode --vocab "$T/bad" < /dev/null
sed 's/"<|endoftext|>": [0-9]*/"<|endoftext|>": 5/' "$V/vocab.json" > "$T/bad/vocab.json"
expect_fail "duplicate id" "vocab.json: id 5 is used twice" "$G" encode --vocab "$T/bad" < /dev/null
cp "$V/vocab.json" "$T/bad/"; { cat "$V/merges.txt"; echo "Ġ zzzzqq"; } > "$T/bad/merges.txt"
expect_fail "merge names an unknown token" "merges.txt:[0-9]*: merge names unknown token" "$G" encode --vocab "$T/bad" < /dev/null
{ cat "$V/merges.txt"; echo "a b c"; } > "$T/bad/merges.txt"
expect_fail "malformed merge line" "merges.txt:[0-9]*: expected two tokens" "$G" decode --vocab "$T/bad" < /dev/null

expect_fail "decode: non-numeric id" "stdin: token #2 'abc' is not an integer" sh -c "echo '1 abc 3' | '$G' decode --vocab '$V'"
expect_fail "decode: id out of range" "stdin: token #2: id 99999 out of range" sh -c "echo '1 99999' | '$G' decode --vocab '$V'"
expect_fail "decode: negative id" "out of range" sh -c "echo '-1' | '$G' decode --vocab '$V'"

expect_fail "tokenize: unreadable input" "/nonexistent/in.txt: cannot open" "$G" tokenize --vocab "$V" --in /nonexistent/in.txt --out "$T/o1"
mkdir -p "$T/ro"; chmod a-w "$T/ro"
if [ "$(id -u)" != 0 ]; then
    expect_fail "tokenize: output not writable" "$T/ro" "$G" tokenize --vocab "$V" --in "$T/c.txt" --out "$T/ro" --val-tokens 5
fi
expect_fail "tokenize: output under a file" "cannot create the output directory" "$G" tokenize --vocab "$V" --in "$T/c.txt" --out "$T/c.txt/x" --val-tokens 5
expect_fail "tokenize: too few tokens" "nothing left for training" "$G" tokenize --vocab "$V" --in "$T/c.txt" --out "$T/o2"
[ -z "$(ls -A "$T/o2" 2>/dev/null)" ] || { echo "FAIL: shards left behind after a failed tokenize"; fail=1; }
# a disk that fills up while writing the second shard (val: 1024+2*2 bytes,
# train: 1024+2*17 bytes): no shard may remain
GPT2C_FAULT_WRITE_AFTER=1040 expect_fail "tokenize: write failure" "No space left" "$G" tokenize --vocab "$V" --in "$T/c.txt" --out "$T/o3" --val-tokens 2
[ -z "$(ls -A "$T/o3" 2>/dev/null)" ] || { echo "FAIL: files left behind after a failed write: $(ls "$T/o3")"; fail=1; }
expect_fail "bpe-train: missing input" "/nonexistent/x.txt: cannot open" "$G" bpe-train --in /nonexistent/x.txt --vocab-size 300 --out "$T/o4"
expect_fail "bpe-train: vocab size too small" "vocab-size" "$G" bpe-train --in "$T/c.txt" --vocab-size 10 --out "$T/o4"
expect_fail "encode: --vocab missing" "--vocab" "$G" encode < /dev/null
exit $fail
