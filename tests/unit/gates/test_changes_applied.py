"""Each candidate change confirmed by the running server, contradicted, or unconfirmed."""

from __future__ import annotations

from typing import Any

from qgate.core.serving import EffectiveConfig
from qgate.gates.changes_applied import confirm_changes, contradicted_verdicts, unconfirmed_warning
from qgate.profile import Profile
from qgate.quality.reuse_records import DEVICE, EXTERNAL, PassRun, PassSuite


def _profile(candidate: dict[str, Any], reference: dict[str, Any] | None = None) -> Profile:
    return Profile.model_validate(
        {
            "name": "p",
            "model": {"embedded": "smollm2"},
            "reference": {"args": reference or {}},
            "candidate": candidate,
            "quality": {"math": {}},
        }
    )


def _config(**fields: Any) -> EffectiveConfig:
    return EffectiveConfig(
        role="candidate", kind="vllm", base_url="http://h:1/v1", served_model="m", **fields
    )


def _pass(name: str, key: str, tokens: float) -> PassRun:
    suite = PassSuite(suite="math.long", before={key: 0.0}, after={key: tokens})
    return PassRun(name=name, role="candidate", suites=[suite])  # type: ignore[arg-type]


def test_what_the_server_reports_confirms_or_contradicts() -> None:
    profile = _profile({"args": {"kv_cache_dtype": "fp8", "dtype": "float16"}})
    checks = {c.name: c for c in confirm_changes(profile, [_config(kv_cache_dtype="fp8_e4m3")])}
    assert checks["args.kv_cache_dtype"].status == "confirmed"
    assert checks["args.dtype"].status == "unconfirmed"  # not reported at all
    checks = {c.name: c for c in confirm_changes(profile, [_config(dtype="bfloat16")])}
    assert checks["args.dtype"].status == "contradicted"


def test_an_hf_override_is_never_confirmed() -> None:
    profile = _profile({"args": {"hf_overrides": '{"rope_theta": 300.0}'}})
    (check,) = confirm_changes(profile, [_config()])
    assert check.status == "unconfirmed" and "reached the model" in check.evidence
    warning = unconfirmed_warning([check])
    assert warning is not None and "args.hf_overrides unconfirmed" in warning


def test_prefix_caching_and_offload_are_confirmed_by_the_pass_counters() -> None:
    profile = _profile(
        {"args": {"enable_prefix_caching": True, "kv_offloading_size": 4}},
        {"enable_prefix_caching": False},
    )
    passes = [_pass("warm", DEVICE, 900.0), _pass("restored", EXTERNAL, 0.0)]
    checks = {c.name: c for c in confirm_changes(profile, [_config()], passes)}
    assert checks["args.enable_prefix_caching"].status == "confirmed"
    assert "900 prompt tokens" in checks["args.enable_prefix_caching"].evidence
    assert checks["args.kv_offloading_size"].status == "unconfirmed"
    passes.append(_pass("load", EXTERNAL, 50.0))
    checks = {c.name: c for c in confirm_changes(profile, [_config()], passes)}
    assert checks["args.kv_offloading_size"].status == "confirmed"
    assert unconfirmed_warning(list(checks.values())) is None
    # without passes or perf counters nothing speaks to it
    (alone,) = confirm_changes(_profile({"args": {"enable_prefix_caching": True}}), [_config()])
    assert alone.status == "unconfirmed"


def test_emulated_weights_are_confirmed_by_their_label() -> None:
    profile = _profile({"emulate_weights": {"format": "fp8_e4m3"}})
    (check,) = confirm_changes(profile, [_config(emulated=["weights: fp8_e4m3 (emulated)"])])
    assert check.status == "confirmed"
    (check,) = confirm_changes(profile, [_config()])
    assert check.status == "unconfirmed"


def test_a_contradicted_change_is_a_failed_gate_so_never_a_pass() -> None:
    """The server says it did not apply a requested setting: the candidate is not what the
    profile asked for (issue 43); an unconfirmed change stays a warning."""
    from qgate.gates.changes_applied import contradicted_verdicts
    from qgate.report.verdict import overall

    profile = _profile({"args": {"kv_cache_dtype": "fp8", "dtype": "float16"}})
    (v,) = contradicted_verdicts(profile, [_config(kv_cache_dtype="auto")])
    assert v.gate == "changes.args.kv_cache_dtype.applied" and not v.passed
    assert v.reason.startswith("CONTRADICTED") and "kv_cache_dtype" in v.reason
    assert overall([v], "skipped: gates failed") == "FAIL"
    assert contradicted_verdicts(profile, [_config(kv_cache_dtype="fp8")]) == []


def test_the_cold_pass_is_no_evidence_that_offload_was_applied() -> None:
    profile = _profile({"args": {"kv_offloading_size": 4}})
    only_cold = [_pass("cold", EXTERNAL, 5000.0), _pass("restored", EXTERNAL, 0.0)]
    (check,) = confirm_changes(profile, [_config()], only_cold)
    assert check.status == "unconfirmed"
    (check,) = confirm_changes(profile, [_config()], [*only_cold, _pass("warm", EXTERNAL, 10.0)])
    assert check.status == "confirmed" and check.evidence.startswith("10 prompt tokens")


def test_a_pass_without_its_before_scrape_is_no_evidence() -> None:
    profile = _profile({"args": {"kv_offloading_size": 4}})
    lifetime = PassRun(
        name="warm",
        role="candidate",
        suites=[PassSuite(suite="math.long", before={}, after={EXTERNAL: 9000.0})],
    )
    (check,) = confirm_changes(profile, [_config()], [lifetime])
    assert check.status == "unconfirmed"


NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}'
LOGGED = "SpeculativeConfig(method='ngram', model=None, num_spec_tokens=3)"


def _spec_snaps(drafts: float) -> list[Any]:
    from qgate.quality.spec_counters import DRAFTS, SpecSnapshot

    return [
        SpecSnapshot(role="candidate", at="start", counters={DRAFTS: 0.0}),
        SpecSnapshot(role="candidate", at="after math", counters={DRAFTS: drafts}),
    ]


def test_speculation_is_confirmed_by_the_logged_config_and_its_drafts() -> None:
    profile = _profile({"args": {"speculative_config": NGRAM}})
    checks = confirm_changes(
        profile, [_config(speculative_config=LOGGED)], speculative=_spec_snaps(9)
    )
    assert checks[0].name == "args.speculative_config" and checks[0].status == "confirmed"
    assert "method='ngram'" in checks[0].evidence and "9 drafts" in checks[0].evidence
    # no log line: the candidate's drafts show it ran
    (only,) = confirm_changes(profile, [_config()], speculative=_spec_snaps(5))
    assert only.status == "confirmed"
    (none,) = confirm_changes(profile, [_config()], speculative=_spec_snaps(0))
    assert none.status == "unconfirmed"


def test_speculation_the_server_did_not_apply_is_contradicted_and_a_failed_gate() -> None:
    profile = _profile({"args": {"speculative_config": NGRAM}})
    (check,) = confirm_changes(profile, [_config(speculative_config="None")])
    assert check.status == "contradicted"
    other = "SpeculativeConfig(method='eagle', model='d', num_spec_tokens=3)"
    (wrong,) = confirm_changes(profile, [_config(speculative_config=other)])
    assert wrong.status == "contradicted"
    (gate,) = contradicted_verdicts(profile, [_config(speculative_config="None")])
    assert gate.gate == "changes.args.speculative_config.applied" and gate.passed is False


def test_a_setting_the_candidate_leaves_to_the_engine_is_never_contradicted() -> None:
    """The candidate asked for no value (its own engine block lacks the key): whatever the
    server reports cannot contradict it (was: '-' checked as the asked value, CONTRADICTED)."""
    profile = Profile.model_validate(
        {
            "name": "p",
            "model": {"embedded": "smollm2"},
            "engine": {"args": {"dtype": "bfloat16"}},
            "candidate": {"engine": {"launcher": ["env", "--"]}},
            "quality": {"math": {}},
        }
    )
    checks = {c.name: c for c in confirm_changes(profile, [_config(dtype="bfloat16")])}
    assert checks["args.dtype"].status == "unconfirmed"
    assert "engine's default" in checks["args.dtype"].evidence
    assert contradicted_verdicts(profile, [_config(dtype="bfloat16")]) == []
