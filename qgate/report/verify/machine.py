"""What a report claims about its machine, re-derived from its fingerprint and its profile.

`run` decides each side's serving settings from the profile and the machine
(qgate/runtime/capabilities.py: fallbacks, `engine.cpu_dtype`, the features an
engine lacks) and writes what it decided as claims: the capability notes, the
engine arguments and emulation labels of each effective configuration, the
report's `emulated` list and its target mismatches. The machine is in the signed
fingerprint, so verify runs the same functions on it and rejects a claim that
does not follow, naming the field and both values. The server-reported part of
an effective configuration must agree with the settings so re-derived (the
check the run made before any suite ran, `check_applied` for vLLM; the served
dtype for every engine qgate starts).

The fingerprint itself is the signer's word: nothing in the report re-derives it.
"""

from __future__ import annotations

from typing import Any

from qgate.checkpoint.formats import emulated_label, stored_dtype
from qgate.core.redact import REDACTED
from qgate.core.serving import EffectiveConfig
from qgate.errors import BadInput, VerificationFailed
from qgate.profile import EngineArgValue, Profile
from qgate.profile.engine_checks import starts_process
from qgate.profile.engines import engine_class
from qgate.profile.packages import version_mismatch
from qgate.profile.side import side
from qgate.report.model import Report
from qgate.report.verify.compare_values import describe, dump, same_value
from qgate.runtime.capabilities import Selection, caps_of, select_machine
from qgate.runtime.effective import check_applied, normalize_dtype
from qgate.runtime.fingerprint import target_mismatches

__all__ = ["as_run", "check_machine", "requested_args"]


def _fail(message: str) -> VerificationFailed:
    return VerificationFailed(message)


def requested_args(selected: Profile, role: str) -> dict[str, EngineArgValue]:
    """The engine arguments a side's server was started with, as `ServerProcess` merges them
    (the platform's defaults, which only add keys, aside)."""
    return side(selected, role).launch_args


def _same_arg(stored: Any, wanted: Any) -> bool:
    if isinstance(stored, str) and REDACTED in stored:
        return True  # a secret value hidden by redaction; the profile check covers it
    return same_value(dump(stored), dump(wanted))


def _check_config(index: int, config: EffectiveConfig, selected: Profile) -> None:
    where = f"effective_configs[{index}] ({config.role})"
    launch = selected.engine_of(config.role)
    if config.kind != launch.kind:
        raise _fail(f"{where}.kind: {config.kind!r} stored, {launch.kind!r} re-derived")
    if not starts_process(launch.kind):
        return  # an endpoint: qgate passed no arguments and reports what it found
    wanted = requested_args(selected, config.role)
    for key, value in wanted.items():
        if key not in config.args or not _same_arg(config.args[key], value):
            shown = repr(config.args[key]) if key in config.args else "nothing"
            raise _fail(f"{where}.args.{key}: {shown} stored, {value!r} re-derived")
    spec = getattr(selected, config.role)
    labels = (
        [emulated_label(spec.emulate_weights, stored_dtype(wanted.get("dtype")))]
        if spec.emulate_weights is not None
        else []
    )
    if config.emulated != labels:
        raise _fail(describe(f"{where}.emulated", config.emulated, labels))
    dtype = wanted.get("dtype")
    if (
        isinstance(dtype, str)
        and dtype.lower() != "auto"
        and config.dtype is not None
        and normalize_dtype(config.dtype) != normalize_dtype(dtype)
    ):
        raise _fail(
            f"{where}.dtype: {config.dtype!r} stored, but the profile and the fingerprinted "
            f"machine give {dtype!r} (the server must serve what it was asked)"
        )
    if engine_class(launch.kind).applied_config_offline:
        problems = check_applied(wanted, config.model_dump())
        if problems:
            raise _fail(f"{where}: the server did not apply what it was asked: {problems[0]}")
    mismatch = version_mismatch(launch.package, config.engine_version)
    if mismatch:
        raise _fail(f"{where}.engine_version: {mismatch}")


def _selection(report: Report, prof: Profile) -> Selection | None:
    if report.fingerprint is None:
        return None
    try:
        return select_machine(prof, caps_of(report.fingerprint))
    except BadInput as exc:
        raise _fail(
            f"the profile cannot run on the fingerprinted machine ({exc.message}): "
            "no run makes this report"
        ) from None


def as_run(report: Report, prof: Profile) -> Profile:
    """The profile as the fingerprinted machine ran it (`engine.cpu_dtype`, fallbacks: the
    sides `qgate run` judged with, qgate/run/context.py `select`); the profile as written when
    the report has no fingerprint. The candidate's changes are judged over this one: a dtype
    auto sets on both sides is no change even where the sides' written args differ in it."""
    selection = _selection(report, prof)
    if selection is None:
        return prof
    return prof.model_copy(
        update={"reference": selection.reference, "candidate": selection.candidate}
    )


def _check_perf_gpus(report: Report, prof: Profile) -> str | None:
    """Each perf run's accelerator count (per-GPU throughput divides by it) is the target's."""
    for index, run in enumerate(report.perf.runs):
        if run.gpus != prof.target.count:
            raise _fail(
                f"perf.runs[{index}] ({run.scenario}, {run.role}).gpus: {run.gpus} stored, "
                f"{prof.target.count} re-derived (the profile's target.count)"
            )
    if not report.perf.runs:
        return None
    return f"per-GPU figures divide by the profile's {prof.target.count} accelerator(s)"


def check_machine(report: Report, prof: Profile, signed_only: list[str]) -> list[str]:
    """Lines for `checked`; VerificationFailed naming the field when a claim does not follow.

    What rests on the fingerprint alone is added to `signed_only`.
    """
    gpus = _check_perf_gpus(report, prof)
    fp = report.fingerprint
    stored_emulated = sorted({e for c in report.effective_configs for e in c.emulated})
    if report.emulated != stored_emulated:
        raise _fail(describe("emulated", report.emulated, stored_emulated))
    selection = _selection(report, prof)
    if fp is None or selection is None:
        signed_only.append(
            "capability_notes, target_mismatches, effective_configs: the report has no "
            "fingerprint to re-derive them from"
        )
        return [gpus] if gpus else []
    lines: list[str] = [gpus] if gpus else []
    if report.capability_notes != selection.notes:
        raise _fail(describe("capability_notes", report.capability_notes, selection.notes))
    lines.append(
        f"{len(selection.notes)} capability notes re-derived from the fingerprint and the profile"
    )
    mismatches = target_mismatches(prof.target, fp)
    if report.target_mismatches != mismatches:
        raise _fail(describe("target_mismatches", report.target_mismatches, mismatches))
    if mismatches and not prof.target.allow_mismatch:
        raise _fail(
            f"target_mismatches: {mismatches[0]}, and the profile does not set "
            "target.allow_mismatch: no run makes this report"
        )
    lines.append("target mismatches re-derived from the fingerprint")
    selected = prof.model_copy(
        update={"reference": selection.reference, "candidate": selection.candidate}
    )
    roles = [c.role for c in report.effective_configs]
    if len(set(roles)) != len(roles):
        raise _fail(f"effective_configs: two configurations of one side ({', '.join(roles)})")
    for index, config in enumerate(report.effective_configs):
        _check_config(index, config, selected)
    if report.effective_configs:
        lines.append(
            f"{len(report.effective_configs)} effective configurations agree with the engine "
            "arguments, emulation and serving dtype re-derived for the fingerprinted machine"
        )
    return lines
