"""The fault catalogue and the detection table (perf/faults/catalogue.py, detection_table.py):
enough classes at enough strengths, and a table that reads catches and false alarms from the
records as they are."""

from __future__ import annotations

import importlib.util
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
FAULTS = ROOT / "perf" / "faults"


def _load(name: str) -> ModuleType:
    if str(FAULTS) not in sys.path:
        sys.path.insert(0, str(FAULTS))
    spec = importlib.util.spec_from_file_location(name, FAULTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


catalogue = _load("catalogue")
table = _load("detection_table")


def test_the_catalogue_holds_the_faults_and_a_realistic_null_of_five_runs_a_kind() -> None:
    levels: dict[str, set[int]] = defaultdict(set)
    for f in catalogue.CATALOGUE:
        if not f.benign:
            levels[f.cls].add(f.level)
    assert len(levels) >= 8, sorted(levels)
    assert sum(len(ls) >= 2 for ls in levels.values()) >= 5, levels
    # a full run leaves the extras out; naming one runs it
    assert "idle-1" not in {f.name for f in catalogue.by_chunk("perf")}
    assert [f.name for f in catalogue.by_chunk("perf", {"idle-1"})] == ["idle-1"]
    benign: dict[str, int] = defaultdict(int)
    for f in catalogue.CATALOGUE:
        if f.benign:
            benign[f.cls] += 1
    # issue 53 item 7: INT8 g32, a batch policy, a fresh process against a cached reference
    assert {k: v for k, v in benign.items() if k.startswith("benign")} == {
        "benign: INT8 g32": 5,
        "benign: max_num_seqs 4": 5,
        "benign: fresh vs cached": 5,
    }
    int8 = next(f for f in catalogue.CATALOGUE if f.name == "int8-g32-1")
    assert int8.candidate["emulate_weights"] == {
        "format": "int8",
        "granularity": "group",
        "group_size": 32,
    }
    assert all(f.chunk == "cached" for f in catalogue.CATALOGUE if f.cls.endswith("cached"))
    names = [f.name for f in catalogue.CATALOGUE]
    assert len(names) == len(set(names))
    for f in [*catalogue.by_chunk("proxy"), *catalogue.by_chunk("perf")]:
        assert f.rules and 0 < f.share <= 1
    # the perf-stage faults: 10% under load, past a length only the perf stage serves, idle
    perf = {f.name: f for f in catalogue.by_chunk("perf")}
    assert perf["load-10"].rules == ("load:6",) and perf["load-10"].share == 0.1
    assert perf["length-perf"].rules == ("length:320",)
    assert {"idle-30", "aa-perf"} <= set(perf)
    with pytest.raises(ValueError, match="chunk"):
        catalogue.by_chunk("nope")


def test_the_broken_life_candidates_draw_their_lives_apart() -> None:
    """Each candidate's proxy draws its life keyed by its name (the bench passes it): at the
    bench's seed the strengths' draws differ, where one unkeyed draw broke both."""
    proxy = _load("proxy")
    lives = [f for f in catalogue.CATALOGUE if f.cls == "life"]
    assert len(lives) >= 4
    broken = {
        f.name: proxy.Faults(
            [proxy.Rule.parse(r) for r in f.rules], seed=0, life_key=f.name
        ).life_broken
        for f in lives
    }
    assert 0 < sum(broken.values()) < len(broken), broken


def test_no_fault_ships_as_a_precision_profile() -> None:
    names = {f.name for f in catalogue.CATALOGUE}
    for profile in (ROOT / "precision_profiles").rglob("*.yaml"):
        text = "\n".join(ln.partition("#")[0] for ln in profile.read_text().splitlines())
        assert "perf/faults" not in text, profile  # no launcher of the fault proxy
        assert not any(f"  {n}:" in text for n in names if n.startswith(("w-", "kv-"))), profile


def _suite(lost: int, gained: int, *, rtol: bool = True, z: bool = True) -> dict[str, Any]:
    rules = {"vllm_rtol": rtol, "unpaired_z": z, "absolute_floor": True, "mlperf_99": True}
    need = dict.fromkeys(table.NEED_KEYS)
    return {
        "n": 32,
        "ref": 0.5,
        "cand": 0.5 - (lost - gained) / 32,
        "lost": lost,
        "gained": gained,
        "rules": rules,
        "items_needed": need,
    }


def _row(cls: str, level: int, verdict: str, **suite: Any) -> dict[str, Any]:
    return {
        "class": cls,
        "strength": f"s{level}",
        "level": level,
        "verdict": verdict,
        "failed_gates": ["math.short.max_drop"] if verdict == "FAIL" else [],
        "ready_s": 40.0,
        "suites_s": 20.0,
        "own_lives": 1,
        "suites": {"math.short": _suite(**suite)},
    }


def test_the_table_counts_catches_and_false_alarms_from_the_records() -> None:
    chunks = {
        "started": {
            "wall_s": 100.0,
            "exit": 1,
            "items": 32,
            "candidates": {
                "w-int8-pc": _row("weights", 1, "PASS", lost=2, gained=1),
                "w-int4-pc": _row("weights", 2, "FAIL", lost=12, gained=0, rtol=False, z=False),
            },
        },
        "proxy": {
            "wall_s": 50.0,
            "exit": 0,
            "items": 32,
            "candidates": {
                "aa-1": _row("A/A", 0, "PASS", lost=1, gained=1),
                "aa-2": _row("A/A", 0, "PASS", lost=3, gained=0, rtol=False),
            },
        },
    }
    text = table.render_table(
        chunks,
        {"model name": "CPU X", "cores": 2, "flags": "avx2"},
        catalogue.CATALOGUE,
        {"engine release": "not here"},
    )
    assert "lost 2, gained 1: under the profile's limits and power" in text
    assert (
        "| weights | s2 | **FAIL** | **FAIL** | math.short.max_drop | 32 | 60 | 1 | pass | "
        "**FAIL** | **FAIL** |" in text
    )
    assert (
        "False alarms over the benign runs (proxy): qgate new (bound) 0/2, qgate old (point) "
        "0/2, NeMo paired Wald 0/2, vLLM rtol .08 1/2, unpaired z 0/2" in text
    )
    assert "Benign `A/A`, 2 runs (PASS/INCONCLUSIVE/FAIL): qgate new (bound) 2/0/0" in text
    assert "- engine release: not here." in text
    rates = table.catch_rates(chunks)
    assert rates["qgate bound"] == {1: 0.0, 2: 1.0}
    assert rates["vllm_rtol"] == {1: 0.0, 2: 1.0}


BOUND_Q = {
    "math": {
        "prompts": ["short"],
        "limit": 32,
        "max_drop": 0.15,
        "alpha": 0.0167,
        "rule": "bound",
    }
}


def test_qgates_columns_are_re_derived_from_the_pairs_not_the_stored_verdict() -> None:
    # 3 lost of 32: within 15 points as a point estimate and not significant, so the old rule
    # passes; its upper bound is far past 15 points, so the new one cannot show it
    row = _row("length", 1, "PASS", lost=3, gained=0)
    row["suites"]["math.short"]["pairs"] = "lll" + "b" * 10 + "n" * 19
    assert table.qgate_verdict(row, BOUND_Q, "point") == "PASS"
    assert table.qgate_verdict(row, BOUND_Q, "bound") == "INCONCLUSIVE"
    # the stored lists are not read for the gates the pairs re-derive: a stored max_drop
    # failure on a suite with nothing lost re-derives to PASS
    clean = _row("A/A", 0, "FAIL", lost=0, gained=0)
    clean["suites"]["math.short"]["pairs"] = "b" * 8 + "n" * 24
    assert table.qgate_verdict(clean, BOUND_Q, "point") == "PASS"
    assert table.qgate_verdict(clean, BOUND_Q, "bound") == "PASS"  # 32 clean show 15 pts
    # a gate no max_drop rule touches is read as its report judged it, under either rule
    idle = clean | {"failed_gates": ["lives.idle-30.1.idle"]}
    assert table.qgate_verdict(idle, BOUND_Q, "bound") == "FAIL"
    assert table.qgate_verdict(idle, BOUND_Q, "point") == "FAIL"
    # and the table says where its report, judged by the rule it ran by, disagreed
    chunks = {
        "proxy": {
            "wall_s": 1.0,
            "exit": 0,
            "profile": {"quality": BOUND_Q},
            "candidates": {"length-25": row},
        }
    }
    text = table.render_table(chunks, {}, catalogue.CATALOGUE, {})
    assert "| inconclusive | pass |" in text and "(its report, rule bound: PASS)" in text


def test_nemos_column_reads_the_suites_margin_and_has_three_verdicts() -> None:
    row = _row("length", 1, "PASS", lost=3, gained=0)
    row["suites"]["math.short"]["pairs"] = "lll" + "b" * 10 + "n" * 19
    assert table.peer_verdict(row, "nemo_wald", BOUND_Q) == "INCONCLUSIVE"
    row["suites"]["math.short"]["pairs"] = "l" * 12 + "b" * 1 + "n" * 19
    assert table.peer_verdict(row, "nemo_wald", BOUND_Q) == "FAIL"
    row["suites"]["math.short"]["pairs"] = "b" * 13 + "n" * 19
    assert table.peer_verdict(row, "nemo_wald", BOUND_Q) == "PASS"
    assert table.peer_verdict(row, "vllm_rtol", BOUND_Q) == "PASS"
    assert table.suite_margin(BOUND_Q, "math.short", row["suites"]["math.short"]) == 0.15


def test_the_false_pass_figure_is_cited_from_the_simulations_record(tmp_path: Path) -> None:
    import json

    assert table.false_pass_lines(tmp_path)[0].startswith("False PASS at the margin: not")
    (tmp_path / "2026-12-07.json").write_text(
        json.dumps(
            {
                "alpha": 0.05,
                "reps": 200,
                "summary": {
                    "qgate bound": {"max_where_qgate_judges": 0.051},
                    "NeMo Wald": {"max_where_qgate_judges": 0.16},
                },
            }
        )
    )
    line = table.false_pass_lines(tmp_path)[0]
    assert "qgate bound 0.051, NeMo Wald 0.160" in line and "2026-12-07.md" in line
    (tmp_path / "2026-12-07-derivation7.json").write_text(
        json.dumps(
            {
                "alpha": 0.05,
                "derivation": 7,
                "reps": 200,
                "summary": {"qgate bound": {"max_where_qgate_judges": 0.053}},
                "cells": [{"bound_exact": 0.0483}, {"bound_exact": None}],
            }
        )
    )
    line = table.false_pass_lines(tmp_path)[0]
    assert "quality derivation 7: qgate bound 0.053" in line
    assert "2026-12-07-derivation7.md" in line and "worst is 0.0483" in line


def test_a_sound_life_and_an_untouched_run_say_why_they_passed() -> None:
    row = _row("life", 1, "PASS", lost=0, gained=0)
    idle = _row("idle", 1, "PASS", lost=0, gained=0) | {"life": "life sound"}
    assert table.why_missed(idle) == "no answer the reference had right changed"
    assert table.why_missed(row) == "no answer the reference had right changed"
    assert table.why_missed(row | {"life": "life sound"}).startswith("this life was drawn sound")


QUALITY = {"math": {"prompts": ["short"], "limit": 32, "max_drop": 0.15, "alpha": 0.0167}}


def test_a_miss_under_the_profiles_power_says_so_with_the_items_its_test_would_need() -> None:
    row = _row("length", 1, "PASS", lost=2, gained=0)
    row["suites"]["math.short"]["pairs"] = "ll" + "b" * 14 + "n" * 16
    said = table.why_missed(row, QUALITY)
    assert said.startswith("lost 2, gained 0: a power limit, not a blind spot: math.short fell 6")
    assert "on 32 items (max_drop 15 pts allowed)" in said
    need = int(said.split("needs ~")[1].split()[0])
    assert 100 < need < 200  # a 6-pt drop at 6% discordance, alpha 0.0167, power 0.8
    assert said.endswith("items to catch that with power 0.8")
    # no profile recorded with the row: the plain statement
    assert table.why_missed(row) == "lost 2, gained 0: under the profile's limits and power"
    chunk = {"profile": {"quality": QUALITY}, "reruns": [{"profile": {"quality": {}}}]}
    assert table.quality_of(chunk, row) == QUALITY
    assert table.quality_of(chunk, row | {"rerun": 0}) == {}


def test_a_catch_by_the_life_probes_is_named_with_what_they_lost() -> None:
    row = _row("idle", 1, "FAIL", lost=0, gained=0) | {"failed_gates": ["lives.idle-30.3.idle"]}
    row["life_probes"] = [
        {
            "gate": "g1",
            "passed": False,
            "lost": 1.0,
            "judged": 4,
            "kind": "start",
            "idle_s": 0.0,
            "endpoint": True,
        },
        {
            "gate": "g2",
            "passed": False,
            "lost": 1.0,
            "judged": 4,
            "kind": "idle",
            "idle_s": 35.2,
            "endpoint": True,
        },
    ]
    assert table._needs(row) == (
        "life probes lost 1/4 at first contact, 1/4 after 35 s idle (no peer rule probes a "
        "life); quality: math.short: no drop"
    )
    row["life_probes"][0]["passed"] = True
    assert table._needs(row).startswith("life probes lost 1/4 after 35 s idle (no peer")
    # a later perf round's life is named by its round (1-based, as people count them)
    row["life_probes"][1] |= {"round": 1, "lost": 4.0, "endpoint": False}
    assert table._needs(row).startswith("life probes lost 4/4 after 35 s idle in perf round 2")


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location(
        "bench_detection", ROOT / "perf" / "bench_detection.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_a_skipped_suite_leaves_the_proxy_profile_and_the_rest_keep_their_rule() -> None:
    bench = _bench()
    whole = bench.quality("proxy", 32, "bound")
    assert {"math", "tool_calls", "structured"} <= set(whole)
    smoke = bench.quality("proxy", 32, "bound", ("tool_calls",))
    assert "tool_calls" not in smoke and smoke["structured"] == whole["structured"]
    assert smoke["math"]["rule"] == smoke["structured"]["rule"] == "bound"
    short = bench.quality("proxy", 32, "bound", ("tool_calls", "math.long"))
    assert short["math"]["prompts"] == ["short"] and whole["math"]["prompts"] == ["short", "long"]
    assert "long_tokens" not in short["math"]  # validate refuses a preamble with no long form


def test_the_lives_chunk_starts_its_candidates_through_the_fault_launcher(
    tmp_path: Path,
) -> None:
    """Issue 53's "broken in one life of several": qgate starts the candidate itself through
    perf/faults/launch.py, in two perf rounds (each side lives twice), its second life the
    broken one, every life probed at its start and after a short pause."""
    bench = _bench()
    faults = catalogue.by_chunk("lives")
    assert {f.name: f.rules for f in faults} == {
        "aa-lives": ("load:100000",),  # the launcher path restarted, no rule firing
        "life-2nd": ("life-n:2",),
    }
    profile = bench.lives_profile(faults, 64, 5.0, tmp_path, "bound")
    launcher = profile["candidates"]["life-2nd"]["engine"]["launcher"]
    assert launcher[1].endswith("perf/faults/launch.py") and launcher[-1] == "--"
    counter = launcher[launcher.index("--lives-file") + 1]
    assert counter == str(tmp_path / "life-2nd.lives")
    assert launcher[launcher.index("--fault") + 1] == "life-n:2"
    assert "launcher" not in profile["reference"].get("engine", {})
    # a side's engine block replaces the top-level one whole: the candidate's must carry the
    # reference's engine arguments itself, or it serves another configuration
    engine = profile["candidates"]["life-2nd"]["engine"]
    assert engine["args"] == profile["engine"]["args"] == bench.ENGINE_ARGS
    assert profile["perf"]["rounds"] == 2 and "gates" not in profile["perf"]
    assert profile["lives"] == {"probes": 4, "idle_s": 5.0}
    assert profile["quality"]["math"]["rule"] == "bound"
    import yaml

    from qgate.profile.load_multi import first_profile, load_any_profile_file

    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(profile, sort_keys=False))
    taken = first_profile(load_any_profile_file(path, check_files=False))  # qgate takes it
    assert taken.perf is not None and taken.perf.rounds == 2


def test_a_partial_rerun_replaces_its_rows_and_keeps_its_own_cost() -> None:
    bench = _bench()
    old = {
        "chunk": "proxy",
        "wall_s": 424.0,
        "exit": 1,
        "items": 32,
        "candidates": {
            "a": _row("A/A", 0, "PASS", lost=0, gained=0),
            "b": _row("idle", 1, "PASS", lost=0, gained=0),
        },
    }
    new = {
        "wall_s": 180.0,
        "exit": 1,
        "items": 32,
        "date": "2026-12-03 15:00 UTC",
        "load": {"before": [3.0, 2.0, 1.0], "after": [5.0, 3.0, 1.0]},
        "profile": {"lives": {"probes": 4, "idle_s": 35}},
        "candidates": {"b": _row("idle", 1, "FAIL", lost=0, gained=0)},
    }
    out = bench.merged(old, new, ["b"])
    assert out["candidates"]["a"] == old["candidates"]["a"]
    assert out["candidates"]["b"]["verdict"] == "FAIL" and out["candidates"]["b"]["rerun"] == 0
    assert out["wall_s"] == 424.0 and out["reruns"][0]["wall_s"] == 180.0
    lines = table.run_costs({"proxy": out})
    assert lines[0].startswith("Chunk `proxy`: 2 candidates, 424 s of `qgate run` under the lock")
    assert (
        "no life probes (run before qgate had them); load not recorded. Its rows but b"
        in (lines[0])
    )
    assert lines[1] == (
        "Re-run of `proxy` on 2026-12-03 15:00 UTC (b, their rows merged in): 1 candidates, "
        "180 s of `qgate run` under the lock (exit 1), math items 32; life probes: 4 at each "
        "life's start (an endpoint's first contact) and after 35 s idle; load average (1 min) "
        "3.0 at its start, 5.0 at its end (the machine shared)."
    )
    # a run of several perf rounds (the lives chunk) says so: each round lives afresh
    again = {**new, "profile": {**new["profile"], "perf": {"rounds": 2}}}
    assert (
        "math items 32; 2 perf rounds, each in fresh lives of both sides; life probes"
        in (table.run_costs({"lives": again})[0])
    )


def test_the_machine_line_names_the_cpu_family() -> None:
    line = table.machine_line(
        {"model name": "AMD EPYC", "cpu family": "26", "model": "2", "cores": 2}
    )
    assert line.startswith("Machine: AMD EPYC (CPU family 26, model 2: Zen 5), 2 cores")


def test_the_docs_page_is_what_the_committed_records_render() -> None:
    """docs/detection.md is regenerated from perf/results/detection/ (`--table-only`)."""
    import json

    out = ROOT / "perf" / "results" / "detection"
    chunks = {
        c: json.loads((out / f"{c}.json").read_text())
        for c in catalogue.CHUNKS
        if (out / f"{c}.json").is_file()
    }
    machine = json.loads((out / "machine.json").read_text())
    md = table.render_table(chunks, machine, catalogue.CATALOGUE, catalogue.NOT_REPRODUCED)
    assert (out / "table.md").read_text() == md
    assert (ROOT / "docs" / "detection.md").read_text() == table.render_docs(md)


def test_the_point_rules_chance_false_alarm_follows_the_trinomial() -> None:
    """At discordance d, an item is lost with d/2: 1 item, any loss fails (d/2); 4 items at
    max_drop 0.15, one net loss fails; the chance falls as the suite grows."""
    assert table.point_false_alarm(1, 0.15, 0.1) == pytest.approx(0.05)
    four = table.point_false_alarm(4, 0.15, 0.042)
    assert 0.07 < four < 0.08  # what failed the A/A smoke on the Intel AMX kind (issue 56)
    assert (
        table.point_false_alarm(32, 0.15, 0.042) < 0.001 < table.point_false_alarm(16, 0.15, 0.042)
    )
    assert table.point_false_alarm(40, 0.15, 0.0) == 0.0  # bit-identical: never


def test_the_aa_rows_read_this_kinds_noise_floor() -> None:
    row = _row("A/A", 0, "PASS", lost=0, gained=0)
    chunks = {
        "proxy": {"candidates": {"aa": row}, "profile": {"quality": {"math": {"max_drop": 0.15}}}}
    }
    amx = table.noise_floor_lines(chunks, {"flags": "avx2 avx512f amx_tile amx_bf16"})
    assert "Intel AVX-512 + AMX" in amx[0] and "26 of 606 items (4.3%)" in amx[0]
    n = row["suites"]["math.short"]["n"]
    expected = table.point_false_alarm(n, 0.15, 26 / 606)
    assert f"fails some max_drop by chance in {expected:.1%} of runs" in amx[1]
    assert table.noise_floor_lines(chunks, {"flags": "avx2 fma"}) == [
        "Noise floor on this CPU kind: not measured (docs/measurements.md)."
    ]


def test_a_fault_that_never_acted_says_so_and_leaves_the_catch_rate() -> None:
    """Issue 53: schema-25 PASSed with nothing dropped (its draws fell on requests that
    carried no `response_format`): its row says the fault acted on nothing, not a miss."""
    idle = {"requests": 112, "acted": 0, "graded": 0, "by_suite": {}}
    idle |= {"carried": {"response_format": 12}}
    missed = _row("schema-lost", 1, "PASS", lost=0, gained=0) | {"fault_acts": idle}
    said = table.why_missed(missed)
    assert said == (
        "the fault acted on none of 112 requests; carried response_format on 12: "
        "nothing to catch in it"
    )
    hit = {"requests": 112, "acted": 3, "graded": 3}
    hit |= {"by_suite": {"structured.response_format": 3}, "carried": {"response_format": 12}}
    caught = _row("schema-lost", 1, "FAIL", lost=3, gained=0, rtol=False) | {"fault_acts": hit}
    aa = _row("A/A", 0, "PASS", lost=0, gained=0) | {"fault_acts": idle | {"carried": {}}}
    assert table.never_acted(missed) and not table.never_acted(caught)
    assert not table.never_acted(aa)  # the null has nothing to act: it stays a benign run
    assert not table.never_acted(_row("schema-lost", 1, "PASS", lost=0, gained=0))
    rows = {"s25": missed, "s100": caught, "aa": aa}
    chunks = {"proxy": {"wall_s": 50.0, "exit": 1, "items": 32, "candidates": rows}}
    text = table.render_table(chunks, {"cores": 2}, catalogue.CATALOGUE, {})
    assert (
        "math.short.max_drop; the fault acted on 3 of 112 requests, 3 of them graded quality "
        "items (structured.response_format 3); carried response_format on 12 |" in text
    )
    assert "Catch rate over the 1 faulty candidates with something to catch (0 broken-life " in text
    assert "drawn sound left out, 1 whose fault acted on no request left out)" in text
    assert table.catch_rates(chunks)["qgate bound"] == {1: 1.0}
    # the chunk's own run counted by its profile, not by the rows a re-run added
    ran = {"profile": {"candidates": {"s25": {}, "aa": {}}}}
    assert table.run_costs({"proxy": chunks["proxy"] | ran})[0].startswith(
        "Chunk `proxy`: 2 candidates"
    )
