"""The engine registry, per-side engines and what each engine serves (no vLLM needed)."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from qgate.cli.main import main
from qgate.core.features import Feature
from qgate.core.registry import DuplicateName, UnknownName
from qgate.errors import BadInput
from qgate.profile import Profile, engines
from qgate.profile.engine_checks import engine_problems, feature_notes
from qgate.profile.engines import engine_class, engine_kinds, register
from qgate.runtime.command_server import CommandServer, fill
from qgate.runtime.factory import make_runtime
from qgate.runtime.process import group_alive
from qgate.runtime.server import ServerProcess
from qgate.runtime.sglang_server import SglangServer
from qgate.runtime.vllm_server import VllmServer


def _profile(**overrides: Any) -> Profile:
    data: dict[str, Any] = {
        "name": "t",
        "model": {"embedded": "smollm2"},
        "candidate": {"args": {"kv_cache_dtype": "fp8"}},
        "quality": {"math": {}},
    }
    data.update(overrides)
    return Profile.model_validate(data)


def test_unknown_engine_names_the_available_ones() -> None:
    with pytest.raises(UnknownName) as info:
        engine_class("vlm")
    assert str(info.value) == (
        "Unknown engine 'vlm' (did you mean 'vllm'?). Available: vllm, endpoint, sglang, command"
    )
    assert engine_kinds()[:4] == ["vllm", "endpoint", "sglang", "command"]


def test_builtin_entries_load_lazily_and_declare_what_they_serve() -> None:
    assert engine_class("vllm") is VllmServer and engine_class("sglang") is SglangServer
    assert "prompt_logprobs" in VllmServer.features
    assert "prompt_logprobs" not in SglangServer.features
    assert SglangServer.metrics is not None and SglangServer.metrics.prefix_hits is None


def test_unknown_kind_in_a_profile_is_exit_2_with_file_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        "name: t\nmodel: {embedded: smollm2}\ncandidate:\n  engine: {kind: sglng}\n"
        "quality: {math: {}}\n"
    )
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    assert f"{path}:4 candidate.engine.kind: Unknown engine 'sglng'" in result.stderr
    assert "did you mean 'sglang'?" in result.stderr


def test_top_level_engine_is_the_default_of_both_sides() -> None:
    profile = _profile(engine={"args": {"max_model_len": 4096}})
    assert profile.engine_of("reference") is profile.engine
    assert profile.engine_of("candidate") is profile.engine


def test_a_side_names_its_own_engine_with_its_own_args_and_env(tmp_path: Path) -> None:
    profile = _profile(
        engine={"args": {"max_model_len": 4096}, "env": {"A": "1"}},
        candidate={
            "engine": {"kind": "sglang", "args": {"context_length": 2048}, "env": {"B": "2"}},
            "args": {"mem_fraction_static": 0.5},
        },
    )
    ref = make_runtime(profile, "reference", Path("/m"), tmp_path)
    cand = make_runtime(profile, "candidate", Path("/m"), tmp_path)
    assert isinstance(ref, VllmServer) and isinstance(cand, SglangServer)
    # Nothing of the top-level block reaches a side that names its own engine.
    assert cand.args == {"context_length": 2048, "mem_fraction_static": 0.5}
    assert cand.env_overlay == {"B": "2"}
    assert ref.args["max_model_len"] == 4096 and ref.env_overlay["A"] == "1"
    command = cand.build_command(1234)
    assert command[1:3] == ["-m", "sglang.launch_server"]
    assert command[3:11] == [
        "--model-path",
        "/m",
        "--served-model-name",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        "1234",
    ]
    assert command[11:] == ["--context-length", "2048", "--mem-fraction-static", "0.5"]


def test_sglang_rejects_args_qgate_sets(tmp_path: Path) -> None:
    profile = _profile(engine={"kind": "sglang", "args": {"model_path": "/x"}})
    with pytest.raises(BadInput, match="engine arg 'model_path' is set by qgate; use model.path"):
        make_runtime(profile, "reference", Path("/m"), tmp_path)


def test_a_suite_that_needs_a_feature_is_refused_at_validate_time(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(
        textwrap.dedent("""\
        name: t
        model: {embedded: smollm2}
        candidate:
          engine: {kind: sglang}
        quality:
          divergence: {sequences: 4}
        """)
    )
    result = CliRunner().invoke(main, ["validate", str(path)])
    assert result.exit_code == 2
    lines = [line.strip() for line in result.stderr.splitlines()]
    assert (
        f"{path}:4 candidate.engine.kind: sglang does not serve prompt_logprobs, "
        "which quality.divergence needs"
    ) in lines
    assert any("sglang does not serve tokenize" in line for line in lines)
    # The reference (vLLM) serves both: no line for it.
    assert not any(line.startswith(f"{path}:") and " engine.kind" in line for line in lines)


def test_declared_features_let_a_command_engine_run_a_suite() -> None:
    command = {"kind": "command", "command": ["srv", "--port", "{port}"]}
    lacking = _profile(candidate={"engine": command}, quality={"divergence": {}})
    assert [m for _, m in engine_problems(lacking)] == [
        "command does not serve prompt_logprobs, which quality.divergence needs",
        "command does not serve tokenize, which quality.divergence needs",
        "command does not serve min_tokens, which quality.divergence needs",
    ]
    declared = {**command, "features": ["prompt_logprobs", "tokenize", "min_tokens"]}
    served = _profile(candidate={"engine": declared}, quality={"divergence": {}})
    assert engine_problems(served) == []


@pytest.mark.parametrize(
    ("block", "where", "message"),
    [
        ({"kind": "command"}, ("candidate", "engine", "command"), "required when kind is"),
        (
            {"kind": "command", "command": ["s", "{prot}", "{port}"]},
            ("candidate", "engine", "command", 1),
            "unknown placeholder {prot}",
        ),
        (
            {"kind": "command", "command": ["s"]},
            ("candidate", "engine", "command"),
            "must contain {port}",
        ),
        (
            {"kind": "vllm", "command": ["s"]},
            ("candidate", "engine", "command"),
            "only valid when kind is 'command'",
        ),
        (
            {"kind": "sglang", "features": ["tokenize"]},
            ("candidate", "engine", "features"),
            "sglang declares its own features",
        ),
    ],
)
def test_engine_block_issues_point_at_the_key(
    block: dict[str, Any], where: tuple[str | int, ...], message: str
) -> None:
    found = engine_problems(_profile(candidate={"engine": block}))
    assert any(path == where and message in text for path, text in found), found


def test_endpoint_on_one_side_only() -> None:
    profile = _profile(
        reference={"engine": {"kind": "endpoint"}, "endpoint": {"base_url": "http://h:1/v1"}}
    )
    assert profile.engine_of("reference").kind == "endpoint"
    assert profile.engine_of("candidate").kind == "vllm"
    assert engine_problems(profile) == []
    # the endpoint engine declares that a side names its server (validate refuses the rest)
    stray = _profile(candidate={"endpoint": {"base_url": "http://h:1/v1"}})
    missing = _profile(candidate={"engine": {"kind": "endpoint"}})
    only = (("candidate", "endpoint"), "only valid when engine.kind is 'endpoint'")
    required = (("candidate", "endpoint"), "required when engine.kind is 'endpoint'")
    assert only in engine_problems(stray) and required in engine_problems(missing)


def test_perf_checks_an_engine_cannot_serve_are_noted_not_passed() -> None:
    perf = {"scenarios": [{"name": "a", "input_tokens": 16, "output_tokens": 4}]}
    profile = _profile(candidate={"engine": {"kind": "sglang"}}, perf=perf)
    notes = [n for n in feature_notes(profile) if "quality." not in n]
    assert notes == [
        "candidate: exact stream token counts (the stream check counts chunks instead): "
        "not available for sglang (it does not serve token_ids)",
        "candidate: prefix-cache hit rate and the other server counters: "
        "not available for sglang (it does not serve engine_metrics)",
        "candidate: salted perf prompts (a prefix cache may serve KV that warm-ups, probes or "
        "earlier blocks wrote): not available for sglang (it does not serve cache_salt)",
    ]
    assert feature_notes(_profile(perf=perf)) == []
    without_perf = feature_notes(_profile(candidate={"engine": {"kind": "sglang"}}))
    assert all("stream" not in n and "prefix-cache" not in n for n in without_perf)


def test_suites_that_fall_back_without_a_feature_are_noted() -> None:
    profile = _profile(candidate={"engine": {"kind": "sglang"}})
    assert (
        "candidate: quality.math: exact token sizes not available for sglang (it does not "
        "serve tokenize; sized from characters)" in feature_notes(profile)
    )
    assert not any("quality.math" in n for n in feature_notes(_profile()))


def test_command_placeholders_are_filled_and_unknown_ones_refused() -> None:
    words = ["x", "--m={model}", "{port}"]
    assert fill(words, {"model": "/m", "port": "9"}) == ["x", "--m=/m", "9"]
    with pytest.raises(BadInput, match="unknown placeholder {gpu}"):
        fill(["{gpu}"], {"model": "/m"})


def test_command_server_answers_to_the_model_path_without_served_name(tmp_path: Path) -> None:
    kw: dict[str, Any] = {
        "role": "candidate",
        "model_path": Path("/m/k3"),
        "served_model": "k3",
        "run_dir": tmp_path,
    }
    plain = CommandServer.from_template(["atom", "--server-port", "{port}"], **kw)
    assert plain.served_model == "/m/k3"
    named = CommandServer.from_template(["srv", "--name", "{served_name}", "{port}"], **kw)
    assert named.served_model == "k3" and named.build_command(7)[-1] == "7"


def test_python_placeholder_is_the_interpreter_running_qgate(tmp_path: Path) -> None:
    server = CommandServer.from_template(
        ["{python}", "-m", "my.server", "--port", "{port}"],
        role="candidate",
        model_path=Path("/m"),
        served_model="m",
        run_dir=tmp_path,
    )
    assert server.build_command(9)[:2] == [sys.executable, "-m"]
    command = {"kind": "command", "command": ["{python}", "-m", "s", "--port", "{port}"]}
    assert engine_problems(_profile(candidate={"engine": command})) == []


# The toy engine: everything a new engine needs is this class and one register() call.
_TOY_SERVER = textwrap.dedent("""\
    import http.server, json, sys
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = {"/health": {}, "/v1/models": {"data": [{"id": sys.argv[2]}]},
                    "/version": {"version": "toy-1"}}.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(json.dumps(body or {}).encode())
        def log_message(self, *a):
            pass
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
""")


class ToyServer(ServerProcess):
    kind: ClassVar[str] = "toy"
    features: ClassVar[frozenset[Feature]] = frozenset({"tokenize"})

    def build_command(self, port: int) -> list[str]:
        return [sys.executable, "-c", _TOY_SERVER, str(port), self.served_model]


@pytest.fixture
def toy_registered() -> Iterator[None]:
    register("toy", ToyServer)
    yield
    engines.ENGINES.unregister("toy")


@pytest.mark.usefixtures("toy_registered")
def test_a_toy_engine_is_one_class_and_one_registry_entry(tmp_path: Path) -> None:
    profile = _profile(engine={"kind": "toy", "startup_timeout_s": 60})
    runtime = make_runtime(profile, "candidate", Path("/m"), tmp_path)
    assert isinstance(runtime, ToyServer)
    with runtime:
        pid = runtime.pid
        config = runtime.effective_config()
    assert pid is not None and not group_alive(pid)
    assert config.kind == "toy" and config.engine_version == "toy-1"
    assert config.served_model == "smollm2"
    # What it lacks is refused for suites that need it, like any engine.
    needs = _profile(engine={"kind": "toy"}, quality={"divergence": {}})
    assert [m for _, m in engine_problems(needs)] == [
        "toy does not serve prompt_logprobs, which quality.divergence needs",
        "toy does not serve min_tokens, which quality.divergence needs",
    ]


def test_register_rejects_a_name_that_is_no_identifier() -> None:
    with pytest.raises(ValueError, match="identifier"):
        register("no such", ToyServer)


def test_a_taken_kind_is_refused_not_replaced() -> None:
    with pytest.raises(DuplicateName, match="engine 'vllm' is already registered"):
        register("vllm", ToyServer)
    assert engine_class("vllm") is VllmServer


def test_an_unknown_kind_is_bad_input_of_the_project() -> None:
    with pytest.raises(UnknownName) as info:
        engine_class("nope")
    assert isinstance(info.value, BadInput) and info.value.exit_code == 2


def test_command_args_keep_their_spelling(tmp_path: Path) -> None:
    block = {
        "kind": "command",
        "command": ["atom", "--server-port", "{port}"],
        "args": {"max-model-len": 8, "enforce-eager": True},
    }
    profile = _profile(candidate={"engine": block, "args": {"kv_cache_dtype": "fp8"}})
    server = make_runtime(profile, "candidate", Path("/m"), tmp_path)
    assert isinstance(server, CommandServer)
    assert server.build_command(5) == [
        "atom",
        "--server-port",
        "5",
        "--max-model-len",
        "8",
        "--enforce-eager",
        "--kv_cache_dtype",
        "fp8",
    ]


def test_the_runtime_package_surface_is_explicit_and_lazy() -> None:
    import subprocess

    import qgate.runtime as rt

    assert set(rt.__all__) == set(rt._HOME)
    assert all(getattr(rt, name) is not None for name in rt.__all__)
    code = "import qgate.runtime, sys; print('qgate.runtime.vllm_server' in sys.modules)"
    fresh = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == "False"


def test_sglang_applied_config_comes_from_its_server_info() -> None:
    from qgate.runtime.sglang_server import server_info_facts, unapplied

    info = {
        "kv_cache_dtype": "fp8_e4m3",
        "dtype": "bfloat16",
        "tp_size": 8,
        "context_length": 32768,
        "version": "0.5.1",
        "mem_fraction_static": 0.8,
    }
    assert server_info_facts(info) == {
        "kv_cache_dtype": "fp8_e4m3",
        "dtype": "bfloat16",
        "tensor_parallel_size": 8,
        "max_model_len": 32768,
        "engine_version": "0.5.1",
    }
    asked = {"kv_cache_dtype": "fp8_e5m2", "tp_size": 8, "mem_fraction_static": 0.5}
    # Only the settings that decide numerics are compared.
    assert unapplied(asked, info) == ["kv_cache_dtype: asked fp8_e5m2, the server runs fp8_e4m3"]
    assert unapplied({"context_length": 32768}, info) == []
    assert unapplied({"dtype": "float16"}, {}) == []


def test_a_started_vllm_sends_the_key_it_requires(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM with VLLM_API_KEY wants the key on /v1: qgate's probes and suites send it."""
    monkeypatch.delenv("VLLM_API_KEY", raising=False)

    def server(env: dict[str, str]) -> VllmServer:
        return VllmServer(
            role="candidate", model_path=tmp_path, served_model="m", run_dir=tmp_path, env=env
        )

    assert server({}).headers() == {}
    assert server({"VLLM_API_KEY": "k1"}).headers() == {"Authorization": "Bearer k1"}
    monkeypatch.setenv("VLLM_API_KEY", "k2")  # inherited from the shell qgate runs in
    assert server({}).headers() == {"Authorization": "Bearer k2"}
