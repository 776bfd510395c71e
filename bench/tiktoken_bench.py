"""tiktoken encode throughput (MB/s, median of N runs) on the same local GPT-2 vocabulary.
usage: tiktoken_bench.py VOCAB_DIR FILE [RUNS] -> prints "tiktoken<TAB>threads<TAB>MB/s<TAB>tokens" lines."""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tiktoken_gpt2 import load  # noqa: E402

vocab, path = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
enc = load(vocab)
raw = open(path, "rb").read()
text = raw.decode("utf-8", errors="replace")
mb = len(raw) / 1e6
ts = []
for _ in range(runs):
    t0 = time.perf_counter()
    ids = enc.encode_ordinary(text)
    ts.append(time.perf_counter() - t0)
print(f"tiktoken\t1\t{mb / statistics.median(ts):.1f}\t{len(ids)}")
# tiktoken's own multi-threading: a batch of line groups on all cores
threads = os.cpu_count() or 1
lines = text.splitlines(keepends=True)
k = max(1, len(lines) // (threads * 16))
batch = ["".join(lines[i:i + k]) for i in range(0, len(lines), k)]
ts = []
for _ in range(runs):
    t0 = time.perf_counter()
    out = enc.encode_ordinary_batch(batch, num_threads=threads)
    ts.append(time.perf_counter() - t0)
print(f"tiktoken\t{threads}\t{mb / statistics.median(ts):.1f}\t{sum(map(len, out))}")
