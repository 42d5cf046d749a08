"""The plan signed before the run: a pre-registration statement, and the report's binding to it.

Before any server starts, `qgate run` signs an in-toto Statement (predicate type
https://qgate.dev/preregistration/v1) of what the run will be judged by: the profile's digest,
every accuracy criterion (gate, comparator, margin, rule, alpha) and the plan's suites,
scenarios and gate sizes. `qgate plan --sign` signs the same statement alone, to hand to an
auditor before the run; `qgate run --preregistration FILE` runs against such a statement and
refuses to start when the profile or the plan no longer match it. The shape follows the
pre-registered evaluation criteria of in-toto/attestation PR #587 (metric, comparator,
threshold, dataset digest, committed before the run) where it fits; every other limit is
committed through the profile file's digest.

The report binds to the statement by the sha256 of its envelope and of its criteria
(`PreregistrationRef`). verify re-derives the criteria from the signed profile and the
report's own plan, and, given the statement (beside the report or `--preregistration`),
checks its signature, that the report binds to exactly those bytes, and that it was signed
before the run's first server could start.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from qgate import __version__
from qgate.attest.dsse import read_envelope
from qgate.attest.keys import LoadedSigner
from qgate.attest.statement import STATEMENT_TYPE, profile_subject, sign_statement
from qgate.core.files import sha256_bytes
from qgate.core.plan import GatePower, Plan, ScenarioPlan, SuitePlan
from qgate.core.records import Record
from qgate.errors import BadInput
from qgate.gates.suite import gates_of
from qgate.profile import Profile
from qgate.profile.vacuous import accuracy_policies

__all__ = [
    "PREREGISTRATION_NAME",
    "PREREGISTRATION_TYPE",
    "Criterion",
    "Preregistration",
    "PreregistrationRef",
    "criteria_of",
    "lock_of",
    "preregistration_of",
    "plan_lock",
    "read_statement",
    "ref_of",
    "servers_from",
    "sign_preregistration",
]

PREREGISTRATION_TYPE = "https://qgate.dev/preregistration/v1"
PREREGISTRATION_NAME = "preregistration.intoto.jsonl"


class Criterion(Record):
    """One accuracy gate as the profile sets it: the bar, fixed before the run."""

    gate: str = Field(description="Profile key path and gate, e.g. 'quality.math.max_drop'.")
    metric: str = Field(description="What the gate compares, e.g. 'accuracy_drop'.")
    comparator: str = Field(description="'<=' or '>='.")
    threshold: float = Field(description="The limit (the margin, for max_drop).")
    rule: str = Field(description="'bound' (non-inferiority) or 'point' (max_drop only).")
    alpha: float = Field(description="The policy's test level (the bound's 1 - confidence).")


class Preregistration(Record):
    """What the run will be judged by, signed before it starts (the statement's predicate)."""

    profile: str = Field(description="The profile file's name.")
    profile_sha256: str = Field(description="sha256 of the profile file's bytes.")
    criteria: list[Criterion] = Field(description="Every accuracy gate's bar.")
    suites: list[SuitePlan] = Field(description="The quality stage as planned.")
    scenarios: list[ScenarioPlan] = Field(description="The perf stage as planned.")
    power: list[GatePower] = Field(description="What each gated suite's size detects or shows.")
    lock_sha256: str = Field(
        description="sha256 of the canonical JSON of the fields above: what the report binds."
    )
    signed_at: str = Field(description="UTC time of signing, ISO 8601.")
    qgate_version: str = Field(description="The qgate that signed it.")


class PreregistrationRef(Record):
    """The report's binding to the statement signed before its run."""

    statement_sha256: str = Field(description="sha256 of the statement's envelope file.")
    lock_sha256: str = Field(
        description="The statement's lock: re-derived by verify from the profile and the plan."
    )
    signed_at: str = Field(description="When the statement was signed (UTC, ISO 8601).")
    keyid: str = Field(
        description="The key that signed the statement (the run's own, or whoever signed "
        "the statement handed to `qgate run --preregistration`)."
    )


def criteria_of(profile: Profile) -> list[Criterion]:
    """Every accuracy gate the profile asks for, in key order."""
    out = []
    for path, policy in accuracy_policies(profile):
        where = ".".join(str(p) for p in path)
        for gate in gates_of(policy):
            limit = gate.limit(policy)
            assert limit is not None  # gates_of keeps the gates the policy asks for
            out.append(
                Criterion(
                    gate=f"{where}.{gate.name}",
                    metric=gate.metric,
                    comparator=gate.comparator,
                    threshold=limit,
                    rule=policy.rule if gate.name == "max_drop" else "point",
                    alpha=policy.alpha,
                )
            )
    return out


def lock_of(
    profile_sha256: str,
    criteria: list[Criterion],
    suites: list[SuitePlan],
    scenarios: list[ScenarioPlan],
    power: list[GatePower],
) -> str:
    """The sha256 over what is registered, as canonical JSON (sorted keys, no spaces)."""
    body: dict[str, Any] = {
        "profile_sha256": profile_sha256,
        "criteria": [c.model_dump(mode="json") for c in criteria],
        "suites": [s.model_dump(mode="json") for s in suites],
        "scenarios": [s.model_dump(mode="json") for s in scenarios],
        "power": [p.model_dump(mode="json") for p in power],
    }
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def plan_lock(profile: Profile, profile_sha256: str, plan: Plan | None) -> str:
    """The lock a run of `profile` following `plan` registers (verify re-derives it so)."""
    suites, scenarios, power = _planned(plan)
    return lock_of(profile_sha256, criteria_of(profile), suites, scenarios, power)


def _planned(plan: Plan | None) -> tuple[list[SuitePlan], list[ScenarioPlan], list[GatePower]]:
    if plan is None:
        return [], [], []
    return list(plan.suites), list(plan.scenarios), list(plan.power)


def preregistration_of(
    profile: Profile, profile_path: Path, profile_sha256: str, plan: Plan | None
) -> Preregistration:
    """The statement's predicate for a run of `profile` (its file's digest) following `plan`."""
    criteria = criteria_of(profile)
    suites, scenarios, power = _planned(plan)
    return Preregistration(
        profile=profile_path.name,
        profile_sha256=profile_sha256,
        criteria=criteria,
        suites=suites,
        scenarios=scenarios,
        power=power,
        lock_sha256=lock_of(profile_sha256, criteria, suites, scenarios, power),
        signed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        qgate_version=__version__,
    )


def sign_preregistration(prereg: Preregistration, loaded: LoadedSigner) -> bytes:
    """The DSSE envelope (one JSON line) of the Statement: subject the profile file."""
    subject = profile_subject(prereg.profile, prereg.profile_sha256)
    statement = {
        "_type": STATEMENT_TYPE,
        "subject": [subject.to_statement()],
        "predicateType": PREREGISTRATION_TYPE,
        "predicate": prereg.model_dump(mode="json"),
    }
    return sign_statement(statement, loaded)


def read_statement(envelope: bytes, origin: str) -> tuple[Preregistration, str]:
    """The predicate and signing keyid of a statement envelope, its signature NOT checked
    (verify checks it; `run` holds its content to the profile and the plan)."""
    env = read_envelope(envelope, origin)  # the project's one envelope reader
    try:
        statement = json.loads(base64.b64decode(env["payload"]))
        keyid = str(env["signatures"][0]["keyid"])
        kind = statement.get("predicateType")
        predicate = statement["predicate"]
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise BadInput(f"{origin}: not a signed pre-registration statement ({exc})") from None
    if kind != PREREGISTRATION_TYPE:
        raise BadInput(
            f"{origin}: not a qgate pre-registration (predicateType {kind!r}, want "
            f"{PREREGISTRATION_TYPE})"
        )
    try:
        return Preregistration.model_validate(predicate), keyid
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadInput(f"{origin}: predicate.{where}: {first['msg']}") from None


def ref_of(envelope: bytes, prereg: Preregistration, keyid: str) -> PreregistrationRef:
    """The report's binding to the statement `envelope` (its predicate `prereg`)."""
    return PreregistrationRef(
        statement_sha256=sha256_bytes(envelope),
        lock_sha256=prereg.lock_sha256,
        signed_at=prereg.signed_at,
        keyid=keyid,
    )


def servers_from(created_at: str, stage_timings: dict[str, float]) -> datetime:
    """The time from which the run's servers may have started, counted back from the
    report's time: every stage after loading and fingerprinting starts or uses servers."""
    before = {"load", "fingerprint"}
    after = sum(s for name, s in stage_timings.items() if name not in before)
    return datetime.fromisoformat(created_at) - timedelta(seconds=after)
