"""Where does a client's TTFT come from? Same server, same prompt length, one request at a time,
request bodies that differ in one field each, interleaved round-robin so that drift hits all alike.

Usage: python3 ttft_probe.py BASE_URL MODEL [INPUT_TOKENS] [OUTPUT_TOKENS] [ROUNDS] > probe.json
Variants (all streaming /v1/completions, ignore_eos, max_tokens = OUTPUT_TOKENS):
  text          a text prompt (the same ids detokenized; what `vllm bench serve` sends)
  ids           the prompt as token ids
  ids+min       + min_tokens = max_tokens
  ids+min+rti   + return_token_ids
  qgate         + temperature 0 and stream_options.include_usage: the body `qgate perf` sends
Prints one JSON object: per variant the TTFT and TPOT medians (ms) and every sample.
Stdlib only (runs on the device machine without the payload).
"""

from __future__ import annotations

import http.client
import json
import random
import statistics
import sys
import time
from urllib.parse import urlsplit


def post(url: str, body: dict) -> tuple[float, float, int]:
    """(ttft_ms, e2e_ms, chunks with text) of one streaming request; the clock starts at send."""
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    data = json.dumps(body).encode()
    t0 = time.perf_counter()
    conn.request("POST", u.path, data, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    first = None
    n = 0
    for raw in resp:
        line = raw.strip()
        if not line.startswith(b"data:") or line == b"data: [DONE]":
            continue
        ev = json.loads(line[5:])
        choices = ev.get("choices") or []
        if choices and (choices[0].get("text") or choices[0].get("token_ids")):
            n += 1
            if first is None:
                first = time.perf_counter()
    end = time.perf_counter()
    conn.close()
    return ((first or end) - t0) * 1e3, (end - t0) * 1e3, n


def main() -> None:
    base, model = sys.argv[1].rstrip("/"), sys.argv[2]
    inp = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    out = int(sys.argv[4]) if len(sys.argv) > 4 else 128
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 8
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    rng = random.Random(0)
    variants = ["text", "ids", "ids+min", "ids+min+rti", "qgate"]
    samples: dict[str, list[tuple[float, float, int]]] = {v: [] for v in variants}
    for r in range(rounds + 1):  # round 0 is a warm-up
        for v in variants:
            ids = [rng.randrange(200, 48000) for _ in range(inp)]
            body: dict = {"model": model, "max_tokens": out, "ignore_eos": True, "stream": True}
            if v == "text":
                u = urlsplit(root + "/detokenize")
                c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
                c.request(
                    "POST",
                    u.path,
                    json.dumps({"model": model, "tokens": ids}),
                    {"Content-Type": "application/json"},
                )
                body["prompt"] = json.loads(c.getresponse().read())["prompt"]
                c.close()
            else:
                body["prompt"] = ids
            if v in ("ids+min", "ids+min+rti", "qgate"):
                body["min_tokens"] = out
            if v in ("ids+min+rti", "qgate"):
                body["return_token_ids"] = True
            if v == "qgate":
                body["temperature"] = 0.0
                body["stream_options"] = {"include_usage": True}
            res = post(base + "/completions", body)
            if r > 0:
                samples[v].append(res)
    summary = {}
    for v, rows in samples.items():
        ttft = [t for t, _, _ in rows]
        tpot = [(e - t) / max(1, n - 1) for t, e, n in rows]
        summary[v] = {
            "ttft_ms_p50": round(statistics.median(ttft), 2),
            "tpot_ms_p50": round(statistics.median(tpot), 3),
            "chunks": [n for _, _, n in rows],
            "ttft_ms": [round(t, 2) for t in ttft],
        }
    doc = {"input_tokens": inp, "output_tokens": out, "rounds": rounds, "variants": summary}
    print(json.dumps(doc))


if __name__ == "__main__":
    main()
