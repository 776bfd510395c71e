#!/usr/bin/env python3
"""Markdown table of bench/quant.sh's results in OUT: per format the file size, resident weights,
prefill tok/s, decode tok/s (batch 1 and 8) with the ratio to fp32 taken within each repeat, decode as
a share of its bandwidth bound, and the perplexity of eval.txt. Medians over the repeats."""
import json, math, os, re, statistics, sys

out = sys.argv[1]
rows = {}
for name in sorted(os.listdir(out)):
    m = re.match(r"generate_([\w-]+)\.jsonl$", name)
    if m:
        with open(os.path.join(out, name)) as f:
            rows[m.group(1)] = [json.loads(l) for l in f if l.strip().startswith("{")]
order = [f for f in ("f32", "bf16", "q8", "q4", "nf4", "q4-kvf32") if f in rows]
sizes = {}
if os.path.exists(os.path.join(out, "sizes.txt")):
    for line in open(os.path.join(out, "sizes.txt")):
        m = re.search(r"\s(\d+)\s+\w+\s+\d+\s+[\d:]+\s+\S*gpt2_(\w+)\.safetensors", line)
        if m:
            sizes[m.group(2)] = int(m.group(1)) / 1e6
sizes["bf16"] = sizes.get("f32")
evals = {}
if os.path.exists(os.path.join(out, "eval.txt")):
    for line in open(os.path.join(out, "eval.txt")):
        m = re.match(r"(\S+) .*?loss[ =:]+([\d.]+)", line)
        if m:
            evals[m.group(1)] = float(m.group(2))

def med(v):
    return statistics.median(v) if v else float("nan")

def per(fmt, batch, key):
    return {r["rep"]: r[key] for r in rows.get(fmt, []) if r["batch"] == batch and key in r}

P = max((r.get("prompt_len", 0) for v in rows.values() for r in v), default=0)
print("| format | KV cache | file MB | resident weights MB | prefill tok/s P=%d |" % P + " decode b=1 tok/s | vs fp32 | "
      "% of bandwidth bound | decode b=8 tok/s | vs fp32 | % of bound b=8 | perplexity | vs fp32 |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
base1, base8 = per("f32", 1, "decode_tok_s"), per("f32", 8, "decode_tok_s")
for f in order:
    d1, d8 = per(f, 1, "decode_tok_s"), per(f, 8, "decode_tok_s")
    r1 = med([d1[k] / base1[k] for k in d1 if k in base1])
    r8 = med([d8[k] / base8[k] for k in d8 if k in base8])
    pct = med(list(per(f, 1, "decode_pct_of_bound").values()))
    pct8 = med(list(per(f, 8, "decode_pct_of_bound").values()))
    kv = sorted({r.get("kv_cache", "f32") for r in rows.get(f, [])})
    res = med(list(per(f, 1, "weights_resident_mb").values()))
    pre = med(list(per(f, 1, "prefill_tok_s").values()))
    ppl = "-"
    if f in evals:
        ppl = "%.3f" % math.exp(evals[f])
    rel = "-"
    if f in evals and "f32" in evals:
        rel = "%+.2f%%" % (100 * (math.exp(evals[f]) / math.exp(evals["f32"]) - 1))
    print("| %s | %s | %.1f | %.0f | %.0f | %.1f | %.2fx | %.0f%% | %.1f | %.2fx | %.0f%% | %s | %s |" % (
        f, "/".join(kv), sizes.get(f.split("-")[0]) or float("nan"), res, pre, med(list(d1.values())), r1, pct,
        med(list(d8.values())), r8, pct8, ppl, rel))
if "nf4-no-dq" in evals and "f32" in evals:
    print("\nnf4 without double quantization: perplexity %.3f (%+.2f%%)" % (
        math.exp(evals["nf4-no-dq"]), 100 * (math.exp(evals["nf4-no-dq"] - evals["f32"]) - 1)))
print("\nrepeats: %d; read bandwidth (gpt2c_peak_get) %s GB/s" % (
    max((len(v) for v in rows.values()), default=0) // 2,
    ", ".join(sorted({"%.1f" % r.get("read_gb_s", 0) for v in rows.values() for r in v}))))
