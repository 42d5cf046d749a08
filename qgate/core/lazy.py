"""What qgate imports late: the deferred modules, and lazy package surfaces (PEP 562).

Every import sits at the top of its module, except those of the modules in
`DEFERRED`, imported inside the function that needs them (tests/unit/test_layers.py
fails on any other function-local import, and on one inside a `try` that catches
ImportError only where it turns a broken install into an error for people).

A package's `__init__` lists its public names and where each lives; importing
the package imports none of them, so `qgate --help` and `qgate validate` stay
instant while `from qgate.perf import summarize` still works.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["DEFERRED", "lazy_getattr"]

DEFERRED: dict[str, str] = {
    # heavy and optional: the engines and the model stack of a target machine
    "vllm": "the engine itself; its argument parser for a dry preflight",
    "torch": "the checkpoint emulation, the fingerprint's accelerator, the demo model",
    "transformers": "the demo model's download; tokenizers of `qgate perf`",
    "safetensors": "the emulated checkpoint's tensors (with torch)",
    "gguf": "GGUF checkpoint digests",
    "lm_eval": "the lm-eval suite",
    "datasets": "lm-eval's task data",
    "ray": "cluster placement",
    "uvloop": "the faster event loop, where installed (not a dependency)",
    "matplotlib": "the HTML view's plots",
    # dependencies that `qgate validate` would import for nothing (measured on the 2-core
    # EPYC: rich ~42 ms, jsonlines ~74 ms): they serve one path of a fast command
    "rich": "the spinner while a server starts (validate reaches the engine classes)",
    "jsonlines": "reading a JSONL file a profile names (validate reaches the JSONL checks)",
    "jsonschema": "grading a structured answer (verify of a report without one, e.g. on a GPU "
    "machine's minimal payload, must not need it)",
    "prometheus_client": "parsing /metrics in the modules whose records `qgate verify` reads (the "
    "reuse and speculative counters; with the wsgiref, ssl and http servers it imports, ~50 ms "
    "of verify's start on the 2-core EPYC); the perf stage's scrape imports it at the top",
    "aiohttp": "scraping /metrics in a module whose records `qgate verify` reads (the reuse and "
    "speculative counters; ~0.25 s CPU of verify's start on the 2-core EPYC); the HTTP "
    "clients, which verify never imports, import it at the top",
}
"""Top-level module -> what it is needed for; imported in the function that needs it."""


def lazy_getattr(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `name` from `package.<homes[name]>` on first use.

    A home may be a submodule path (`verify.single`) or, for a name the package hands on
    from a lower layer, an absolute module (`qgate.attest.keys`).
    """

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module = home if home.startswith("qgate.") else f"{package}.{home}"
        return getattr(importlib.import_module(module), name)

    return __getattr__
