"""Where a run happened, for an auditor: the CI job (from its own variables) and --metadata.

Read from the variables GitHub Actions and GitLab CI set for every job (other
CI systems: `CI=true` alone gives the provider "ci"), and from `--metadata
KEY=VALUE` (vLLM bench's convention). Only the named variables are read, so a
job's tokens never reach a report; a metadata value whose key names a secret,
or that has a credential's shape, is written as REDACTED. The fields live in
the signed statement: an edited one fails verification.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from pydantic import Field

from qgate.core.records import Record
from qgate.core.redact import REDACTED, is_secret_name, redact_text
from qgate.errors import BadInput

__all__ = [
    "CiProvenance",
    "ClusterLife",
    "ClusterProvenance",
    "ExecutorLife",
    "ExecutorProvenance",
    "PlacedProvenance",
    "RunProvenance",
    "parse_metadata",
    "provenance_lines",
    "provenance_properties",
    "run_provenance",
]

_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class CiProvenance(Record):
    """The CI job that ran qgate, as the CI system describes it."""

    provider: str = Field(description="github-actions, gitlab-ci, or ci (only CI=true set).")
    repository: str | None = Field(default=None, description="owner/name or group/project.")
    commit: str | None = Field(default=None, description="The commit the job ran on.")
    ref: str | None = Field(default=None, description="Branch or tag ref.")
    workflow: str | None = Field(default=None, description="Workflow or pipeline name.")
    job: str | None = Field(default=None, description="Job name.")
    run_id: str | None = Field(default=None, description="Run or pipeline id.")
    run_attempt: str | None = Field(default=None, description="Attempt of that run.")
    run_url: str | None = Field(default=None, description="Link to the run or job.")
    runner: str | None = Field(default=None, description="Runner name.")


class ClusterLife(Record):
    """One server life on a Ray cluster: the node it ran on and what it held there."""

    side: str = Field(description="'reference', a candidate's name, or an attribution trial.")
    node_id: str = Field(description="Ray node id of the life's actor.")
    ip: str = Field(description="The node's address; the server listened there.")
    resources: dict[str, float] = Field(
        description="What the life held on the node (CPU, GPU, custom resources)."
    )
    node_resources: dict[str, float] = Field(
        default_factory=dict, description="The node's total resources, as Ray listed them."
    )
    round: int = Field(
        default=0,
        description="The perf round the life served (0: the run's own lives; k: a fresh life "
        "of perf round k + 1, perf.rounds).",
    )
    hostname: str | None = Field(
        default=None, description="The node's host name, as the life's actor read it there."
    )
    cpu: str | None = Field(
        default=None, description="The node's CPU, from its fingerprint taken on the node."
    )
    checkpoint_sha256: str | None = Field(
        default=None, description="The checkpoint's tree digest as the node read its copy."
    )
    model_path: str | None = Field(
        default=None,
        description="The weights the server loaded on the node: the checkpoint, or the copy "
        "with emulated weights its node made in its own cache.",
    )
    node_log: str | None = Field(
        default=None, description="The server's log on the node (copied to the run's logs/)."
    )


class ClusterProvenance(Record):
    """The Ray cluster a run's lives ran on (qgate/cluster/); signed, not re-derived."""

    ray_version: str = Field(description="Ray's version on the driver.")
    address: str = Field(description="The cluster's address the driver joined.")
    lives: list[ClusterLife] = Field(
        default_factory=list, description="Every life that got ready, in the order it did."
    )
    speed_design: str = Field(
        description="How speed ratios face node differences: where each side's perf blocks ran."
    )


class ExecutorLife(Record):
    """One server life a plug-in executor placed: where it ran, in the executor's words."""

    side: str = Field(description="'reference', a candidate's name, or an attribution trial.")
    where: str = Field(description="Where it ran, as the executor names it (a node, a job).")
    round: int = Field(default=0, description="The perf round the life served (0: the run's own).")


class ExecutorProvenance(Record):
    """Where a plug-in executor (qgate.executors) ran the lives, as it reports it; signed, not
    re-derived. The Ray executor's own record is `ClusterProvenance`."""

    executor: str = Field(description="The executor's registered name (`qgate run --executor`).")
    address: str = Field(description="The address it was given (--cluster), or ''.")
    lives: list[ExecutorLife] = Field(
        default_factory=list, description="Every life it made, in the order it made them."
    )
    facts: dict[str, str] = Field(
        default_factory=dict, description="What else it reports (its version, a queue, ...)."
    )


PlacedProvenance = ClusterProvenance | ExecutorProvenance
"""What an executor that places lives elsewhere reports (`Lives.provenance`)."""


class RunProvenance(Record):
    """CI provenance and the user's metadata of one run."""

    ci: CiProvenance | None = Field(default=None, description="The CI job, when in one.")
    metadata: dict[str, str] = Field(
        default_factory=dict, description="--metadata KEY=VALUE pairs (secret-looking redacted)."
    )
    cluster: ClusterProvenance | ExecutorProvenance | None = Field(
        default=None,
        description="Where the lives ran when an executor placed them: the Ray cluster's record, "
        "or a plug-in executor's (None: this machine).",
    )


def _github(env: Mapping[str, str]) -> CiProvenance:
    server, repo, run = (
        env.get("GITHUB_SERVER_URL"),
        env.get("GITHUB_REPOSITORY"),
        env.get("GITHUB_RUN_ID"),
    )
    url = f"{server}/{repo}/actions/runs/{run}" if server and repo and run else None
    return CiProvenance(
        provider="github-actions",
        repository=repo,
        commit=env.get("GITHUB_SHA"),
        ref=env.get("GITHUB_REF"),
        workflow=env.get("GITHUB_WORKFLOW"),
        job=env.get("GITHUB_JOB"),
        run_id=run,
        run_attempt=env.get("GITHUB_RUN_ATTEMPT"),
        run_url=url,
        runner=env.get("RUNNER_NAME"),
    )


def _gitlab(env: Mapping[str, str]) -> CiProvenance:
    return CiProvenance(
        provider="gitlab-ci",
        repository=env.get("CI_PROJECT_PATH"),
        commit=env.get("CI_COMMIT_SHA"),
        ref=env.get("CI_COMMIT_REF_NAME"),
        workflow=env.get("CI_PIPELINE_NAME"),
        job=env.get("CI_JOB_NAME"),
        run_id=env.get("CI_PIPELINE_ID"),
        run_attempt=None,
        run_url=env.get("CI_JOB_URL"),
        runner=env.get("CI_RUNNER_DESCRIPTION"),
    )


def ci_provenance(env: Mapping[str, str]) -> CiProvenance | None:
    """The CI job described by `env`, or None outside CI."""
    if env.get("GITHUB_ACTIONS") == "true" or env.get("GITHUB_RUN_ID"):
        return _github(env)
    if env.get("GITLAB_CI") == "true" or env.get("CI_PIPELINE_ID"):
        return _gitlab(env)
    if env.get("CI", "").lower() in ("true", "1"):
        return CiProvenance(provider="ci")
    return None


def parse_metadata(pairs: Sequence[str]) -> dict[str, str]:
    """`KEY=VALUE` strings as a dict; BadInput naming the pair that is not one."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not _KEY.match(key):
            raise BadInput(
                f"--metadata {pair!r}: expected KEY=VALUE, KEY of letters, digits, "
                f"'_', '.', '-' (at most 64)"
            )
        if key in out:
            raise BadInput(f"--metadata {key!r} given twice")
        out[key] = REDACTED if is_secret_name(key) and value else redact_text(value)
    return out


def run_provenance(
    env: Mapping[str, str],
    metadata: Mapping[str, str],
    cluster: PlacedProvenance | None = None,
) -> RunProvenance | None:
    """What the report records about where it ran; None outside CI and a cluster without
    metadata."""
    ci = ci_provenance(env)
    if ci is None and not metadata and cluster is None:
        return None
    return RunProvenance(ci=ci, metadata=dict(metadata), cluster=cluster)


def provenance_lines(p: RunProvenance | None) -> list[str]:
    """One line for the CI job, one for the metadata, for every view."""
    if p is None:
        return []
    lines = []
    if p.ci is not None:
        c = p.ci
        named = (
            ("repository", c.repository),
            ("commit", c.commit),
            ("ref", c.ref),
            ("workflow", c.workflow),
            ("job", c.job),
            ("run", c.run_id),
            ("attempt", c.run_attempt),
            ("runner", c.runner),
            ("url", c.run_url),
        )
        facts = [f"{name} {value}" for name, value in named if value]
        lines.append(f"CI: {c.provider}" + (f" ({', '.join(facts)})" if facts else "") + ".")
    if p.metadata:
        lines.append("Metadata: " + ", ".join(f"{k}={v}" for k, v in p.metadata.items()) + ".")
    if isinstance(p.cluster, ExecutorProvenance):
        placed = p.cluster
        where = "; ".join(
            f"{life.side}{f' (round {life.round + 1})' if life.round else ''} on {life.where}"
            for life in placed.lives
        )
        told = "".join(f", {k} {v}" for k, v in placed.facts.items())
        at = f" at {placed.address}" if placed.address else ""
        lines.append(f"Executor {placed.executor}{at}{told}: {where or 'no life'}.")
    elif p.cluster is not None:
        ray = p.cluster
        where = "; ".join(
            f"{life.side}{f' (round {life.round + 1})' if life.round else ''} "
            f"on node {life.node_id[:12]} ({life.ip}"
            + (f", host {life.hostname}" if life.hostname else "")
            + ", "
            + ", ".join(f"{k} {v:g}" for k, v in life.resources.items())
            + ")"
            for life in ray.lives
        )
        lines.append(f"Ray cluster {ray.address} (Ray {ray.ray_version}): {where or 'no life'}.")
        lines.append(f"Speed across nodes: {ray.speed_design}.")
    return lines


def provenance_properties(p: RunProvenance | None) -> list[tuple[str, str]]:
    """(name, value) pairs for JUnit properties: ci.commit, ..., metadata.KEY."""
    if p is None:
        return []
    out = [(f"ci.{k}", str(v)) for k, v in (p.ci.model_dump() if p.ci else {}).items() if v]
    return out + [(f"metadata.{k}", v) for k, v in p.metadata.items()]
