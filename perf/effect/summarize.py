"""Per suite: both accuracies, lost/gained, the exact McNemar p and what a subset would see.

    .venv/bin/python perf/effect/summarize.py RUN_DIR [RUN_DIR ...] [--first math=64 recall=20]

Reads each run's report (through `qgate show --format json`, so the same
parser users have) and prints, for every exact-answer suite, the reference
and candidate accuracy, items lost and gained, the one-sided exact McNemar
p-value, and the divergence statistics. `--first SUITE=N` also prints the
same figures for the first N items of that suite, which is what a profile
with `limit: N` (math) or fewer haystacks (recall) would have measured.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from qgate.quality.divergence import summarize_divergence  # noqa: E402
from qgate.quality.records import DivergenceRun  # noqa: E402
from qgate.quality.stats import mcnemar_p  # noqa: E402


def _report(run_dir: Path) -> dict[str, Any]:
    envelope = run_dir / "report.intoto.jsonl"
    shown = subprocess.run(
        [sys.executable, "-m", "qgate.cli", "-q", "show", str(envelope), "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    out: dict[str, Any] = json.loads(shown.stdout)
    return out


def _pairs(report: dict[str, Any]) -> dict[str, list[tuple[bool, bool]]]:
    sides: dict[tuple[str, str], dict[str, bool]] = {}
    for run in report["quality"]["runs"]:
        sides[(run["suite"], run["role"])] = {i["id"]: bool(i["correct"]) for i in run["items"]}
    out: dict[str, list[tuple[bool, bool]]] = {}
    for (suite, role), ref in sides.items():
        if role != "reference":
            continue
        cand = sides[(suite, "candidate")]
        out[suite] = [(ref[k], cand[k]) for k in ref]  # the reference's item order
    return out


def _line(suite: str, pairs: list[tuple[bool, bool]]) -> str:
    n = len(pairs)
    ref = sum(r for r, _ in pairs)
    cand = sum(c for _, c in pairs)
    lost = sum(r and not c for r, c in pairs)
    gained = sum(c and not r for r, c in pairs)
    p = mcnemar_p(lost, gained)
    return (
        f"| {suite} | {n} | {ref / n:.1%} | {cand / n:.1%} | {(ref - cand) / n * 100:+.1f} "
        f"| {lost} | {gained} | {p:.3g} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--first", nargs="*", default=[], help="SUITE=N: also the first N items")
    a = ap.parse_args()
    firsts = {k: int(v) for k, v in (f.split("=") for f in a.first)}
    for run_dir in a.runs:
        report = _report(run_dir)
        print(
            f"\n{run_dir.name} ({report['fingerprint']['cpu']['model']}; "
            f"{'; '.join(report['capability_notes'])[:160]})"
        )
        print("| suite | n | reference | candidate | drop pts | lost | gained | McNemar p |")
        print("|---|---|---|---|---|---|---|---|")
        for suite, pairs in _pairs(report).items():
            print(_line(suite, pairs))
            for prefix, count in firsts.items():
                if suite.startswith(prefix) and count < len(pairs):
                    print(_line(f"{suite} (first {count})", pairs[:count]))
        div = report["quality"].get("divergence")
        if div:
            s = summarize_divergence(DivergenceRun.model_validate(div))
            print(
                f"divergence: {s.positions} positions; mean KL {s.mean_kld:.4g}, p99 "
                f"{s.p99_kld:.4g}, max {s.max_kld:.4g}, top-1 {s.top1_agreement:.1%}"
            )


if __name__ == "__main__":
    main()
