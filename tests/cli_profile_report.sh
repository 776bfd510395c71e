#!/bin/bash
# report.html renders in headless Chromium with every chart present.
set -u
G="$1"
C=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [ -z "$C" ]; then echo "SKIP: chromium not installed (apt-get install -y chromium)"; exit 77; fi
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
"$G" profile --model gpt2 --layers 2 --heads 2 --embd 32 --vocab 128 --batch 2 --seq 8 --trials 2 --warmup 0 \
    --threads 1 --no-peak --quiet --out "$D/p" || { echo "FAIL: profile"; exit 1; }
timeout 120 "$C" --headless --no-sandbox --disable-gpu --user-data-dir="$D/chrome" --dump-dom "file://$D/p/report.html" \
    > "$D/dom.html" 2> "$D/chrome.err"
if [ ! -s "$D/dom.html" ]; then echo "FAIL: chromium rendered nothing"; tail -5 "$D/chrome.err"; exit 1; fi
for id in svg-top-ops svg-attn-ffn svg-phases svg-layer-types svg-roofline svg-scaling tbl-top-ops tbl-phases findings; do
    grep -q "id=\"$id\"" "$D/dom.html" || { echo "FAIL: $id missing from the rendered DOM"; exit 1; }
done
n=$(grep -o '<rect' "$D/dom.html" | wc -l)
[ "$n" -gt 10 ] || { echo "FAIL: only $n rects rendered"; exit 1; }
echo "cli_profile_report: ok ($n rects)"
