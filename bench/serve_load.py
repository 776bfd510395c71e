#!/usr/bin/env python3
"""Load generator for `gpt2c serve` (standard library only): C concurrent
clients, each sending R streaming completions back to back; every server-sent
event is time-stamped on arrival.  Prints one JSON line per concurrency:
throughput (generated tokens / wall time), time to first token (p50, p99),
the gaps between a stream's tokens (p50, p99), and errors.

  bench/serve_load.py --url http://127.0.0.1:8080 --clients 1,4,16 --requests 2 --max-tokens 64

Tokens are counted exactly from the server's /metrics (generated tokens
before and after); gaps are measured between events (the server sends one
event per token while the reader keeps up, several tokens in one otherwise)."""
import argparse
import http.client
import json
import statistics
import threading
import time
import urllib.parse


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


def one_request(host, port, body):
    """-> (ttft_s, [gap_s per token], tokens, error)"""
    c = http.client.HTTPConnection(host, port, timeout=600)
    t0 = time.perf_counter()
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    if r.status != 200:
        return None, [], 0, "HTTP %d" % r.status
    first, last, gaps, ntok = None, None, [], 0
    while True:
        line = r.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: {"):
            continue
        ev = json.loads(line[6:])
        ch = ev["choices"][0]
        if ch.get("finish_reason"):
            continue
        now = time.perf_counter()
        if first is None:
            first = now
        else:
            gaps.append(now - last)
        last = now
        ntok += 1
    c.close()
    return (first - t0) if first else None, gaps, ntok, None


def generated_tokens(u):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    for line in text.splitlines():
        if line.startswith("gpt2c_generated_tokens_total "):
            return int(float(line.split()[1]))
    return 0


def run(url, clients, requests, max_tokens, prompt):
    u = urllib.parse.urlparse(url)
    tok0 = generated_tokens(u)
    res, lock = [], threading.Lock()

    def client(i):
        for j in range(requests):
            body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 1.0, "seed": 1000 * i + j, "stream": True}
            out = one_request(u.hostname, u.port, body)
            with lock:
                res.append(out)

    t0 = time.perf_counter()
    th = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    wall = time.perf_counter() - t0
    ttft = [r[0] for r in res if r[0] is not None]
    gaps = [g for r in res for g in r[1]]
    toks = generated_tokens(u) - tok0
    events = sum(r[2] for r in res)
    return {
        "clients": clients,
        "requests": len(res),
        "errors": sum(1 for r in res if r[3]),
        "tokens": toks,
        "events": events,
        "wall_s": round(wall, 3),
        "throughput_tok_s": round(toks / wall, 2),
        "ttft_p50_ms": round(1e3 * pct(ttft, 50), 1),
        "ttft_p99_ms": round(1e3 * pct(ttft, 99), 1),
        "token_gap_p50_ms": round(1e3 * pct(gaps, 50), 1),
        "token_gap_p99_ms": round(1e3 * pct(gaps, 99), 1),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8080")
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--requests", type=int, default=2, help="per client, back to back")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--prompt", default="The quick brown fox jumps over the lazy dog. Once upon a time, in a land far away,")
    a = ap.parse_args()
    for c in [int(x) for x in a.clients.split(",")]:
        print(json.dumps(run(a.url, c, a.requests, a.max_tokens, a.prompt)), flush=True)


if __name__ == "__main__":
    main()
