"""pip's sources as uv flags, and the command wrapper `make setup` runs uv through."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from qgate.core import pip_sources as module
from qgate.core.pip_sources import main, sources_from_pip_config

ROOT = Path(__file__).resolve().parents[3]

# `pip config list` on the development machine (global files, a user file, PIP_* variables)
PIP_CONFIG = """\
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.find-links='/opt/wheels-env'
"""


def test_pips_sources_become_uv_flags_with_pips_index_semantics() -> None:
    flags, env = sources_from_pip_config(PIP_CONFIG)
    assert flags == [
        "--constraint",
        "/etc/xdg/pip/constraints.txt",
        "--find-links",
        "/opt/wheels-env",  # PIP_FIND_LINKS over the file's, as pip does
        "--extra-index-url",
        "file:///opt/pypi/simple",
        "--extra-index-url",
        "file:///opt/pypi-more/simple",
        "--index-strategy",
        "unsafe-best-match",
    ]
    assert env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"}
    assert sources_from_pip_config("") == ([], {})
    no_index, _ = sources_from_pip_config("global.no-index='true'\n")
    assert "--no-index" in no_index


def test_the_wrapper_appends_pips_sources_and_their_certificate(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(module, "pip_sources", lambda python: sources_from_pip_config(PIP_CONFIG))
    code = main(
        [
            sys.executable,
            "-c",
            "import os, sys; print(sys.argv[1:], os.environ['SSL_CERT_FILE'])",
            "x",
        ]
    )
    out = capfd.readouterr().out
    assert code == 0
    assert "['x', '--constraint', '/etc/xdg/pip/constraints.txt', '--find-links'" in out
    assert out.rstrip().endswith("'unsafe-best-match'] /etc/ssl/certs/ca-certificates.crt")


def test_the_wrapper_says_what_it_cannot_run(capfd: pytest.CaptureFixture[str]) -> None:
    assert main(["/no/such/uv", "pip", "install"]) == 127
    assert "cannot run /no/such/uv" in capfd.readouterr().err
    assert main([]) == 2


def test_it_runs_from_a_checkout_where_qgate_is_not_installed(tmp_path: Path) -> None:
    """`make setup` runs it before qgate's dependencies exist: the standard library only."""
    pip_conf = tmp_path / "pip.conf"
    pip_conf.write_text("[global]\nfind-links = /opt/some-wheels\n")
    done = subprocess.run(
        [
            sys.executable,
            "-S",
            "-m",
            "qgate.core.pip_sources",
            sys.executable,
            "-c",
            "import sys; print(sys.argv[1:])",
        ],
        cwd=ROOT,
        env={"PIP_CONFIG_FILE": str(pip_conf), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "'--find-links', '/opt/some-wheels'" in done.stdout
