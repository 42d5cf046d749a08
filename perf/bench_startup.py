"""Wall time of the light qgate commands, which must start instantly (goal < 0.5 s).

Runs each command N times as a fresh process and prints the median, min and
max. Usage: python perf/bench_startup.py [-n 10] [--profile FILE]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOAL_S = 0.5


def _qgate() -> list[str]:
    script = Path(sys.executable).parent / "qgate"
    if script.is_file():
        return [str(script)]
    found = shutil.which("qgate")
    return [found] if found else [sys.executable, "-m", "qgate.cli"]


def _default_profile() -> Path:
    # A CPU profile: the others name model folders that exist only on their hardware.
    shipped = sorted((ROOT / "precision_profiles").glob("*-cpu-*.yaml"))
    return shipped[0] if shipped else ROOT / "tests" / "unit" / "profiles" / "valid.yaml"


def time_command(argv: list[str], runs: int) -> list[float]:
    """Wall seconds of `runs` fresh runs of `argv`; raises if one fails."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", "--runs", type=int, default=10, help="runs per command")
    parser.add_argument("--profile", type=Path, default=None, help="profile for `validate`")
    args = parser.parse_args()
    profile = args.profile or _default_profile()
    qgate = _qgate()
    commands = {
        "qgate --help": [*qgate, "--help"],
        "qgate --version": [*qgate, "--version"],
        f"qgate validate {profile.name}": [*qgate, "validate", str(profile)],
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
    }
    print(f"{'command':<48} {'median s':>9} {'min s':>7} {'max s':>7}  goal < {GOAL_S} s")
    for label, argv in commands.items():
        times = time_command(argv, args.runs)
        median = statistics.median(times)
        verdict = "" if label.startswith("python") else ("ok" if median < GOAL_S else "SLOW")
        print(f"{label:<48} {median:9.3f} {min(times):7.3f} {max(times):7.3f}  {verdict}")
    print(f"({args.runs} runs each; load average {_load()})")


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "unknown"


if __name__ == "__main__":
    main()
