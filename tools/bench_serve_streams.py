#!/usr/bin/env python3
"""Concurrent streaming load on an OpenAI-compatible server (nectar serve or
llama-server), standard library only: C clients each stream REQS greedy
completions of TOKENS tokens at the same time. Prints one line: aggregate
generated tokens/s over the wall time, and p50/p95 time to first token
measured by the client (request sent -> first text chunk), so queueing and
prompt reading count the same for every server. Not a test.

    python3 tools/bench_serve_streams.py URL CONCURRENCY [TOKENS] [REQS]
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse


def one(url, prompt, tokens, out):
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=900)
    body = json.dumps({"prompt": prompt, "max_tokens": tokens, "temperature": 0, "stream": True,
                       "ignore_eos": True, "stream_options": {"include_usage": True}})
    t0 = time.monotonic()
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    first, chunks, n_usage = None, 0, None
    for raw in resp:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        ev = json.loads(line[6:])
        if ev.get("usage"):
            n_usage = ev["usage"].get("completion_tokens")
        if ev.get("timings", {}).get("predicted_n") and n_usage is None:
            n_usage = ev["timings"]["predicted_n"]
        for ch in ev.get("choices", []):
            if ch.get("text"):
                chunks += 1
                if first is None:
                    first = time.monotonic() - t0
    conn.close()
    out.append((n_usage if n_usage is not None else chunks, first if first is not None else 0.0))


def pct(xs, p):
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, int(round(p / 100 * len(xs) + 0.4999)) - 1))]


def main():
    url, c = sys.argv[1], int(sys.argv[2])
    tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 64
    reqs = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    out = []

    def client(i):
        for k in range(reqs):
            one(url, f"Client {i} request {k}: once upon a time, in a land far away,", tokens, out)

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    total = sum(n for n, _ in out)
    ttft = [f * 1000 for _, f in out]
    print(f"{c:<12} {len(out):<10} {total / wall:<14.2f} {pct(ttft, 50):<12.1f} {pct(ttft, 95):<12.1f}")


if __name__ == "__main__":
    main()
