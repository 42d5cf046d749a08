"""A stand-in for the vLLM server launcher, for fault injection in runtime tests.

Accepts the flags qgate passes (--model, --served-model-name, --host, --port,
engine flags) and behaves according to --fake-mode:

  serve        answer /health, /v1/models, /version; print a vLLM-like config line
  exit         print a few lines and exit 1 at once
  hang         never answer /health
  fatal-hang   print a fatal engine error, then hang (as vLLM can after a failed worker)
  port-once    the first run (per --fake-marker file) fails like a taken port, later runs serve
  slow         serve, but hold every POST (a completion) unanswered for ten minutes: requests
               in flight, as in a suite on a loaded server

--fake-child starts a sleeping child in the same process group (like vLLM's
engine core); --fake-ignore-term ignores SIGTERM (a server stuck in shutdown).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--fake-mode", default="serve")
    p.add_argument("--fake-child", action="store_true")
    p.add_argument("--fake-ignore-term", action="store_true")
    p.add_argument("--fake-marker", default="")
    p.add_argument("--fake-kv", default=None, help="kv_cache_dtype to report instead of the asked")
    p.add_argument("--fake-version", default="0.0.0-fake", help="what /version answers")
    p.add_argument("--model", required=True)
    p.add_argument("--served-model-name", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--max-model-len", type=int, default=2048)
    args, unknown = p.parse_known_args()
    print(f"fake vllm: args {sys.argv[1:]}", flush=True)
    print(f"fake vllm: unknown flags {unknown}", flush=True)

    if args.fake_ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.fake_mode == "exit":
        print("ValueError: fake engine refuses this configuration", flush=True)
        return 1
    if args.fake_mode == "port-once":
        marker = Path(args.fake_marker)
        if not marker.exists():
            marker.write_text("1")
            print("OSError: [Errno 98] Address already in use", flush=True)
            return 1

    if args.fake_child:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    kv = args.fake_kv or args.kv_cache_dtype
    print(
        "(EngineCore pid=1) INFO 11-30 03:03:09 [core.py:133] Initializing a V1 LLM engine "
        f"(v0.0.0-fake) with config: model='{args.model}', dtype=torch.bfloat16, "
        f"max_seq_len={args.max_model_len}, tensor_parallel_size=1, pipeline_parallel_size=1, "
        f"quantization=None, kv_cache_dtype={kv}, device_config=cpu, "
        f"served_model_name={args.served_model_name}",
        flush=True,
    )
    if args.fake_mode == "fatal-hang":
        print(
            "(EngineCore pid=2) ERROR [core.py:1510] RuntimeError: Worker failed with error "
            "'Available memory on node 0 (0.59/23.54 GiB) on kv cache allocation is less than "
            "requested memory for kv (2.0 GiB).'",
            flush=True,
        )
        time.sleep(600)
        return 0
    if args.fake_mode == "hang":
        time.sleep(600)
        return 0

    served = args.served_model_name
    max_len = args.max_model_len

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path == "/health":
                self._send(200, {})
            elif self.path == "/version":
                self._send(200, {"version": args.fake_version})
            elif self.path == "/v1/models":
                auth = self.headers.get("Authorization")
                self._send(
                    200,
                    {"data": [{"id": served, "max_model_len": max_len, "seen_auth": auth}]},
                )
            else:
                self._send(404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802
            print(f"fake vllm: POST {self.path} held", flush=True)
            if args.fake_mode == "slow":
                time.sleep(600)
            self._send(501, {"error": "the stand-in answers no completion"})

        def log_message(self, format: str, *a: object) -> None:
            return

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"fake vllm: serving on {args.host}:{args.port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
